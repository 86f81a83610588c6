#include "grammar/distinct_on.h"

#include <algorithm>

#include "grammar/lexer.h"
#include "grammar/render.h"

namespace trellis::grammar {
namespace {

// The tokens of `text`, without the final kEnd (or kError) token.
std::vector<Token> KeyTokens(std::string_view text) {
  std::vector<Token> out = Tokenize(text);
  while (!out.empty() &&
         (out.back().kind == TokenKind::kEnd || out.back().kind == TokenKind::kError)) {
    out.pop_back();
  }
  return out;
}

bool IsOrderWord(const Token& token, std::string_view word) {
  return token.kind == TokenKind::kIdentifier && token.value == word;
}

bool IsOrderMark(const Token& token, std::string_view mark) {
  return token.kind == TokenKind::kPunctuation && token.value == mark;
}

bool IsColumnNameToken(const Token& token) {
  return token.kind == TokenKind::kIdentifier || token.kind == TokenKind::kQuotedIdentifier;
}

}  // namespace

std::string FirstByOrderSql(std::string_view argument, std::string_view filter) {
  std::string out = "(pg_catalog.array_agg(";
  out += argument;
  out += ")";
  if (!filter.empty()) {
    out += " ";
    out += filter;
  }
  return out + ")[1]";
}

std::string OrderKey(std::string_view item) {
  const std::vector<Token> tokens = KeyTokens(item);
  int depth = 0;
  std::size_t end = item.size();
  for (const Token& token : tokens) {
    if (depth == 0 && (IsOrderWord(token, "asc") || IsOrderWord(token, "desc") ||
                       IsOrderWord(token, "nulls") || IsOrderWord(token, "using"))) {
      end = token.begin;
      break;
    }
    if (IsOrderMark(token, "(") || IsOrderMark(token, "[")) ++depth;
    if (IsOrderMark(token, ")") || IsOrderMark(token, "]")) --depth;
  }
  std::string_view key = item.substr(0, end);
  while (!key.empty() && (key.back() == ' ' || key.back() == '\t' || key.back() == '\n' ||
                          key.back() == '\r' || key.back() == '\f' || key.back() == '\v')) {
    key.remove_suffix(1);
  }
  return std::string(key);
}

bool SameTokens(std::string_view a, std::string_view b) {
  const std::vector<Token> x = KeyTokens(a);
  const std::vector<Token> y = KeyTokens(b);
  // A quoted name is the same name as the plain one it spells ("a" and a).
  return std::equal(x.begin(), x.end(), y.begin(), y.end(), [](const Token& p, const Token& q) {
    return (p.kind == q.kind || (IsColumnNameToken(p) && IsColumnNameToken(q))) &&
           p.value == q.value;
  });
}

std::optional<std::string> OrderKeyColumn(std::string_view key, std::string_view qualifier) {
  const std::vector<Token> tokens = KeyTokens(key);
  if (tokens.size() == 1 && IsColumnNameToken(tokens[0])) return tokens[0].value;
  if (tokens.size() == 3 && IsColumnNameToken(tokens[0]) && IsOrderMark(tokens[1], ".") &&
      IsColumnNameToken(tokens[2]) && tokens[0].value == qualifier) {
    return tokens[2].value;
  }
  return std::nullopt;
}

TransformStmt DistinctOnAsGrouping(const TransformStmt& stmt) {
  TransformStmt out = stmt;
  out.distinct_on.clear();
  out.order_by.clear();
  out.group_by = stmt.distinct_on;
  std::string order;
  for (std::size_t i = stmt.distinct_on.size(); i < stmt.order_by.size(); ++i) {
    if (!order.empty()) order += ", ";
    order += stmt.order_by[i];
  }
  for (auto& item : out.select) {
    const bool key = std::any_of(stmt.distinct_on.begin(), stmt.distinct_on.end(),
                                 [&](const std::string& d) { return SameTokens(item.expr, d); });
    if (key) continue;
    AggregateCall call;
    call.function = AggregateFunction::kRecomputed;
    call.name = std::string(kFirstByOrder);
    call.argument = "(" + item.expr + ")" + (order.empty() ? "" : " ORDER BY " + order);
    item.expr = FirstByOrderSql(*call.argument);
    AggregateUse use;
    use.call = call;
    use.begin = 1;
    use.end = item.expr.size() - 4;  // without ")[1]"
    item.aggregate = call;
    item.aggregate_uses = {std::move(use)};
  }
  return out;
}

std::optional<std::string> DistinctOnTieRefusal(const TransformStmt& stmt,
                                                const std::vector<std::string>& key_columns) {
  const std::string table = RenderQualified(stmt.source.table);
  if (key_columns.empty()) {
    return "SELECT DISTINCT ON over " + table +
           ", which has no primary key, is not supported: rows that tie on every ORDER BY "
           "key leave the row kept to PostgreSQL, so the target could not equal the query; add a "
           "primary key to " +
           table + " and end the ORDER BY with its columns";
  }
  std::vector<std::string> missing;
  for (const auto& column : key_columns) {
    bool named = false;
    for (std::size_t i = stmt.distinct_on.size(); i < stmt.order_by.size(); ++i) {
      auto named_column = OrderKeyColumn(OrderKey(stmt.order_by[i]), stmt.source.Qualifier());
      if (named_column && *named_column == column) named = true;
    }
    if (!named) missing.push_back(column);
  }
  if (missing.empty()) return std::nullopt;
  std::string keys;
  for (const auto& column : missing) {
    if (!keys.empty()) keys += ", ";
    keys += RenderName(stmt.source.Qualifier()) + "." + RenderName(column);
  }
  std::string order;
  for (const auto& item : stmt.order_by) {
    if (!order.empty()) order += ", ";
    order += item;
  }
  return "SELECT DISTINCT ON needs an ORDER BY that picks one row per key: rows that tie on "
         "every ORDER BY key leave the row kept to PostgreSQL, so the target could not equal "
         "the query; end the ORDER BY with the primary key of " +
         table + " (ORDER BY " + order + ", " + keys + ")";
}

}  // namespace trellis::grammar
