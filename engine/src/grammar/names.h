// Parsing of names: identifiers, schema-qualified table names, PAUSE/RESUME
// addresses and table aliases (spec/grammar.md, "Names").
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "grammar/ast.h"
#include "grammar/parse_error.h"
#include "grammar/token_cursor.h"

namespace trellis::grammar {

// PostgreSQL keeps at most this many bytes of a name (NAMEDATALEN - 1) and
// silently truncates longer ones; Trellis refuses them instead, so the name
// it records is the name PostgreSQL uses.
inline constexpr std::size_t kMaxNameBytes = 63;

// Refuses `token` as a name when it is longer than kMaxNameBytes.
std::optional<ParseError> CheckNameLength(const TokenCursor& cursor, const Token& token);

enum class NameRule {
  kName,   // a reserved keyword must be quoted
  kLabel,  // any keyword allowed, as for a column after '.'
};

// One identifier, plain (folded to lower case) or quoted (kept as written).
// `what` completes "expected <what>, found ..." when there is none.
std::variant<std::string, ParseError> ParseName(TokenCursor& cursor, std::string_view what,
                                                NameRule rule = NameRule::kName);

// `table` or `schema.table`.
std::variant<QualifiedName, ParseError> ParseQualifiedName(TokenCursor& cursor,
                                                           std::string_view what);

// One to three names separated by '.', kept as raw parts.
std::variant<std::vector<std::string>, ParseError> ParseAddress(TokenCursor& cursor);

// `AS alias`, a bare alias (any name but a reserved keyword), or nothing.
std::variant<std::optional<std::string>, ParseError> ParseOptionalAlias(TokenCursor& cursor);

}  // namespace trellis::grammar
