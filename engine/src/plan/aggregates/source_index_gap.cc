#include "plan/aggregates/source_index_gap.h"

#include "grammar/lexer.h"
#include "plan/template.h"
#include "sql/quote.h"

namespace trellis::plan::aggregates {
namespace {

bool IsDot(const grammar::Token& token) {
  return token.kind == grammar::TokenKind::kPunctuation && token.value == ".";
}

// `expr` without the `alias.` qualifiers (not those after another dot, which
// belong to a longer name), and whether what is left is one column name.
struct Unqualified {
  std::string text;
  bool column = false;
};

Unqualified Unqualify(const std::string& expr, const std::string& alias) {
  const std::vector<grammar::Token> tokens = grammar::Tokenize(expr);
  Unqualified out;
  std::size_t copied = 0;
  std::size_t kept = 0;  // tokens left, for the one-column test
  const grammar::Token* last = nullptr;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    const grammar::Token& token = tokens[i];
    if (token.kind == grammar::TokenKind::kEnd) break;
    const bool qualifier = grammar::IsName(token) && token.value == alias &&
                           i + 1 < tokens.size() && IsDot(tokens[i + 1]) &&
                           (i == 0 || !IsDot(tokens[i - 1]));
    if (qualifier) {
      out.text += expr.substr(copied, token.begin - copied);
      copied = tokens[i + 1].end;
      ++i;
      continue;
    }
    ++kept;
    last = &token;
  }
  out.text += expr.substr(copied);
  out.column = kept == 1 && last != nullptr && grammar::IsName(*last);
  if (out.column) out.text = sql::Ident(last->value);
  return out;
}

}  // namespace

std::optional<std::string> ColumnName(const std::string& expr, const std::string& alias) {
  std::vector<grammar::Token> tokens = grammar::Tokenize(expr);
  while (!tokens.empty() && tokens.back().kind == grammar::TokenKind::kEnd) tokens.pop_back();
  auto is = [](const grammar::Token& token, std::string_view value) {
    return token.kind == grammar::TokenKind::kPunctuation && token.value == value;
  };
  std::size_t first = 0;
  std::size_t last = tokens.size();
  while (last - first >= 3 && is(tokens[first], "(") && is(tokens[last - 1], ")")) {
    ++first;
    --last;
  }
  if (last - first == 3 && grammar::IsName(tokens[first]) && tokens[first].value == alias &&
      IsDot(tokens[first + 1])) {
    first += 2;
  }
  if (last - first != 1 || !grammar::IsName(tokens[first])) return std::nullopt;
  return tokens[first].value;
}

std::string HasIndexOnSql(const std::string& source, const std::vector<std::string>& columns) {
  std::vector<std::string> leading;
  for (std::size_t i = 0; i < columns.size(); ++i) {
    leading.push_back("i.indkey[" + std::to_string(i) +
                      "] = (SELECT a.attnum FROM pg_catalog.pg_attribute AS a WHERE a.attrelid = "
                      "i.indrelid AND a.attname = " +
                      sql::Literal(columns[i]) + ")");
  }
  return "EXISTS (SELECT 1 FROM pg_catalog.pg_index AS i WHERE i.indrelid = "
         "pg_catalog.to_regclass(" +
         sql::Literal(source) +
         ") AND i.indisvalid AND i.indnkeyatts >= " + std::to_string(columns.size()) + " AND " +
         sql::Join(leading, " AND ") + ")";
}

std::vector<std::string> IndexParts(const std::string& alias,
                                    const std::vector<GroupingExpression>& keys) {
  std::vector<std::string> parts;
  for (const auto& key : keys) {
    const Unqualified bare = Unqualify(key.expr, alias);
    parts.push_back(bare.column ? bare.text : "(" + bare.text + ")");
  }
  return parts;
}

std::string IndexFixSql(const std::string& source, const std::string& alias,
                        const std::vector<GroupingExpression>& keys) {
  const std::vector<std::string> parts = IndexParts(alias, keys);
  return Render("CREATE INDEX CONCURRENTLY ON {source} ({parts})",
                {{"source", source}, {"parts", sql::Join(parts, ", ")}});
}

std::string GroupLookupProbeSql(const std::string& source, const std::string& alias,
                                const std::vector<GroupingExpression>& keys) {
  // Each value is an InitPlan parameter, so the planner cannot fold the
  // comparison away and must plan a lookup by an unknown value.
  std::vector<std::string> conditions;
  for (const auto& key : keys) {
    conditions.push_back("(" + key.expr + ") = (SELECT NULL::" + key.type + ")");
  }
  return Render("EXPLAIN (FORMAT JSON) SELECT 1 FROM {source} AS {alias} WHERE {conditions}",
                {{"source", source},
                 {"alias", sql::Ident(alias)},
                 {"conditions", sql::Join(conditions, " AND ")}});
}

bool ProbeUsesIndex(const std::string& explain_json) {
  return explain_json.find("\"Index Cond\"") != std::string::npos ||
         explain_json.find("\"Recheck Cond\"") != std::string::npos;
}

}  // namespace trellis::plan::aggregates
