#include "grammar/select_item.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "grammar/aggregate.h"
#include "grammar/expression.h"
#include "grammar/keywords.h"
#include "grammar/names.h"
#include "grammar/subquery.h"

namespace trellis::grammar {
namespace {

// PostgreSQL accepts up to catalog.schema.table.column.
constexpr std::size_t kMaxColumnReferenceParts = 4;

bool IsDot(const Token& token) {
  return token.kind == TokenKind::kPunctuation && token.value == ".";
}

// The last token of `expr` if it is a bare column reference: names
// separated by dots, the first not a word PostgreSQL reserves (`true`,
// `current_date` and the like are values, not columns).
const Token* ColumnReferenceName(const ExprSpan& expr) {
  static_assert(2 * kMaxColumnReferenceParts - 1 <= ExprSpan::kKeptTokens);
  const std::vector<Token>& tokens = expr.first_tokens;
  if (expr.token_count != tokens.size()) return nullptr;  // longer than any reference
  if (tokens.size() % 2 == 0 || tokens.size() > 2 * kMaxColumnReferenceParts - 1) return nullptr;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    const Token& token = tokens[i];
    const bool ok = i % 2 == 1 ? IsDot(token)
                               : token.kind == TokenKind::kQuotedIdentifier ||
                                     token.kind == TokenKind::kIdentifier;
    if (!ok) return nullptr;
  }
  const Token& first = tokens.front();
  if (first.kind == TokenKind::kIdentifier && IsPostgresReservedWord(first.value)) return nullptr;
  return &tokens.back();
}

// `*` or `t.*`.
bool IsStar(const ExprSpan& expr) {
  const std::vector<Token>& tokens = expr.first_tokens;
  if (expr.token_count != tokens.size()) return false;
  const Token& last = tokens.back();
  return last.kind == TokenKind::kOperator && last.value == "*" &&
         (tokens.size() == 1 || (tokens.size() == 3 && IsDot(tokens[1])));
}

}  // namespace

std::variant<ParsedSelectItem, ParseError> ParseSelectItem(TokenCursor& cursor,
                                                           std::string_view what,
                                                           AggregateContext context) {
  auto scanned = ScanExpression(cursor, what);
  if (auto* error = std::get_if<ParseError>(&scanned)) return *error;
  ExprSpan& expr = std::get<ExprSpan>(scanned);
  if (IsStar(expr)) {
    return cursor.UnsupportedAt(expr.position,
                                "SELECT * is not supported: list the columns the target keeps "
                                "(its columns are fixed when it is defined)");
  }
  // Before its aggregates are read: those of a subquery are not the item's.
  if (auto subquery = FirstSubquery(expr)) {
    return cursor.UnsupportedAt(expr.position + *subquery,
                                "a subquery in a SELECT item is not supported: JOIN its table "
                                "(or a transform that groups it) and select the column, or test "
                                "the subquery in WHERE");
  }
  auto aggregates = ReadAggregates(cursor, expr, context);
  if (auto* error = std::get_if<ParseError>(&aggregates)) return *error;

  ParsedSelectItem parsed;
  if (cursor.AtKeyword("as")) {
    cursor.Advance();
    parsed.name_position = cursor.Peek().begin;
    auto alias = ParseName(cursor, "a column alias after AS");
    if (auto* error = std::get_if<ParseError>(&alias)) return *error;
    parsed.item.alias = std::get<std::string>(std::move(alias));
  } else {
    const Token* column = ColumnReferenceName(expr);
    if (column == nullptr) {
      return cursor.Expected(
          "AS and a column alias after the expression (only a bare column reference is named "
          "without AS)");
    }
    if (auto error = CheckNameLength(cursor, *column)) return *error;
    parsed.name_position = column->begin;
    parsed.item.alias = column->value;
  }
  parsed.item.expr = std::move(expr.text);
  parsed.item.position = expr.position;
  auto& read = std::get<AggregatesRead>(aggregates);
  parsed.item.aggregate = std::move(read.whole);
  parsed.item.aggregate_uses = std::move(read.uses);
  return parsed;
}

}  // namespace trellis::grammar
