// SELECT DISTINCT ON (expr, ...) ... ORDER BY ... (spec/grammar.md section
// 12): one target row per value of the DISTINCT ON expressions, the first
// source row of that value by the ORDER BY. The engine keeps it as a
// grouping by the DISTINCT ON expressions whose other columns are each the
// first row's value, recomputed for every group a change touches
// (DistinctOnAsGrouping): the group-by-key recompute of a GROUP BY
// transform, with no algebraic state.
#pragma once

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/ast.h"
#include "grammar/lexer.h"
#include "grammar/render.h"

namespace trellis::grammar {

// The name of the recomputed call a DISTINCT ON column is kept by: an
// AggregateCall{kRecomputed, name = kFirstByOrder, argument = "(expr) ORDER
// BY keys"} reads the group's first row's `expr` by the keys,
// `(pg_catalog.array_agg(argument))[1]` (FirstByOrderSql). Not a function
// name a user can write: it starts with the engine's hidden prefix.
inline constexpr std::string_view kFirstByOrder = "__trellis_first";

// The SQL of a kFirstByOrder call over `argument` (the text between the
// aggregate's parentheses), with `filter` (a FILTER clause, or empty) on the
// aggregate.
inline std::string FirstByOrderSql(std::string_view argument, std::string_view filter = {});

// An ORDER BY item without its ASC/DESC, NULLS FIRST/LAST or USING op: the
// expression it sorts by, as written.
inline std::string OrderKey(std::string_view item);

// True when `a` and `b` are the same tokens (`o.x` and `o . x` are; `x` and
// `o.x` are not).
inline bool SameTokens(std::string_view a, std::string_view b);

// The column an ORDER BY key names when it is a bare reference to a column
// of the FROM table: `c`, or `q.c` with `q` the FROM table's qualifier.
inline std::optional<std::string> OrderKeyColumn(std::string_view key, std::string_view qualifier);

// The grouping a GROUP BY plan keeps for a DISTINCT ON statement: GROUP BY
// the DISTINCT ON expressions; each SELECT item that is one of them is a
// key, every other item `e` becomes the kFirstByOrder call of `(e) ORDER BY
// <the ORDER BY items after the DISTINCT ON ones>`, its text that call's
// SQL. DISTINCT ON and ORDER BY are cleared. REQUIRES: stmt.HasDistinctOn().
inline TransformStmt DistinctOnAsGrouping(const TransformStmt& stmt);

// The refusal (a message naming the fix) of a DISTINCT ON statement whose
// ORDER BY does not pick one row per key: it must name, after the DISTINCT
// ON expressions, every column of the source's key `key_columns` (its
// primary key), so that no two rows tie. nullopt when it does.
inline std::optional<std::string> DistinctOnTieRefusal(const TransformStmt& stmt,
                                                       const std::vector<std::string>& key_columns);

// Definitions (header only: no translation unit of its own).

namespace distinct_on_detail {

// The tokens of `text`, without the final kEnd (or kError) token.
inline std::vector<Token> KeyTokens(std::string_view text) {
  std::vector<Token> out = Tokenize(text);
  while (!out.empty() &&
         (out.back().kind == TokenKind::kEnd || out.back().kind == TokenKind::kError)) {
    out.pop_back();
  }
  return out;
}

inline bool IsOrderWord(const Token& token, std::string_view word) {
  return token.kind == TokenKind::kIdentifier && token.value == word;
}

inline bool IsOrderMark(const Token& token, std::string_view mark) {
  return token.kind == TokenKind::kPunctuation && token.value == mark;
}

inline bool IsColumnNameToken(const Token& token) {
  return token.kind == TokenKind::kIdentifier || token.kind == TokenKind::kQuotedIdentifier;
}

}  // namespace distinct_on_detail

inline std::string FirstByOrderSql(std::string_view argument, std::string_view filter) {
  std::string out = "(pg_catalog.array_agg(";
  out += argument;
  out += ")";
  if (!filter.empty()) {
    out += " ";
    out += filter;
  }
  return out + ")[1]";
}

inline std::string OrderKey(std::string_view item) {
  const std::vector<Token> tokens = distinct_on_detail::KeyTokens(item);
  int depth = 0;
  std::size_t end = item.size();
  for (const Token& token : tokens) {
    if (depth == 0 && (distinct_on_detail::IsOrderWord(token, "asc") ||
                       distinct_on_detail::IsOrderWord(token, "desc") ||
                       distinct_on_detail::IsOrderWord(token, "nulls") ||
                       distinct_on_detail::IsOrderWord(token, "using"))) {
      end = token.begin;
      break;
    }
    if (distinct_on_detail::IsOrderMark(token, "(") || distinct_on_detail::IsOrderMark(token, "["))
      ++depth;
    if (distinct_on_detail::IsOrderMark(token, ")") || distinct_on_detail::IsOrderMark(token, "]"))
      --depth;
  }
  std::string_view key = item.substr(0, end);
  while (!key.empty() && (key.back() == ' ' || key.back() == '\t' || key.back() == '\n' ||
                          key.back() == '\r' || key.back() == '\f' || key.back() == '\v')) {
    key.remove_suffix(1);
  }
  return std::string(key);
}

inline bool SameTokens(std::string_view a, std::string_view b) {
  const std::vector<Token> x = distinct_on_detail::KeyTokens(a);
  const std::vector<Token> y = distinct_on_detail::KeyTokens(b);
  // A quoted name is the same name as the plain one it spells ("a" and a).
  return std::equal(x.begin(), x.end(), y.begin(), y.end(), [](const Token& p, const Token& q) {
    return (p.kind == q.kind || (distinct_on_detail::IsColumnNameToken(p) &&
                                 distinct_on_detail::IsColumnNameToken(q))) &&
           p.value == q.value;
  });
}

inline std::optional<std::string> OrderKeyColumn(std::string_view key, std::string_view qualifier) {
  const std::vector<Token> tokens = distinct_on_detail::KeyTokens(key);
  if (tokens.size() == 1 && distinct_on_detail::IsColumnNameToken(tokens[0]))
    return tokens[0].value;
  if (tokens.size() == 3 && distinct_on_detail::IsColumnNameToken(tokens[0]) &&
      distinct_on_detail::IsOrderMark(tokens[1], ".") &&
      distinct_on_detail::IsColumnNameToken(tokens[2]) && tokens[0].value == qualifier) {
    return tokens[2].value;
  }
  return std::nullopt;
}

inline TransformStmt DistinctOnAsGrouping(const TransformStmt& stmt) {
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

inline std::optional<std::string> DistinctOnTieRefusal(
    const TransformStmt& stmt, const std::vector<std::string>& key_columns) {
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
