#include "grammar/keywords.h"

#include <algorithm>
#include <array>
#include <iterator>

namespace trellis::grammar {
namespace {

constexpr std::array<std::string_view, 18> kReserved = {
    "and",  "as",      "column",  "cross", "from",  "full",  "group",  "inner", "join",
    "left", "lateral", "natural", "on",    "outer", "right", "select", "using", "where",
};

constexpr std::array<std::string_view, 10> kUnreserved = {
    "add", "alter", "by", "drop", "index", "pause", "resume", "source", "transform", "without",
};

// PostgreSQL 15, Appendix C.
constexpr std::string_view kPostgresReserved[] = {
    "all",
    "analyse",
    "analyze",
    "and",
    "any",
    "array",
    "as",
    "asc",
    "asymmetric",
    "authorization",
    "binary",
    "both",
    "case",
    "cast",
    "check",
    "collate",
    "collation",
    "column",
    "concurrently",
    "constraint",
    "create",
    "cross",
    "current_catalog",
    "current_date",
    "current_role",
    "current_schema",
    "current_time",
    "current_timestamp",
    "current_user",
    "default",
    "deferrable",
    "desc",
    "distinct",
    "do",
    "else",
    "end",
    "except",
    "false",
    "fetch",
    "for",
    "foreign",
    "freeze",
    "from",
    "full",
    "grant",
    "group",
    "having",
    "ilike",
    "in",
    "initially",
    "inner",
    "intersect",
    "into",
    "is",
    "isnull",
    "join",
    "lateral",
    "leading",
    "left",
    "like",
    "limit",
    "localtime",
    "localtimestamp",
    "natural",
    "not",
    "notnull",
    "null",
    "offset",
    "on",
    "only",
    "or",
    "order",
    "outer",
    "overlaps",
    "placing",
    "primary",
    "references",
    "returning",
    "right",
    "select",
    "session_user",
    "similar",
    "some",
    "symmetric",
    "table",
    "tablesample",
    "then",
    "to",
    "trailing",
    "true",
    "union",
    "unique",
    "user",
    "using",
    "variadic",
    "verbose",
    "when",
    "where",
    "window",
    "with",
};

bool Contains(const auto& words, std::string_view word) {
  return std::find(std::begin(words), std::end(words), word) != std::end(words);
}

}  // namespace

bool IsKeyword(std::string_view word) {
  return Contains(kReserved, word) || Contains(kUnreserved, word);
}

bool IsReservedKeyword(std::string_view word) { return Contains(kReserved, word); }

bool IsPostgresReservedWord(std::string_view word) { return Contains(kPostgresReserved, word); }

}  // namespace trellis::grammar
