#include "grammar/parser.h"

#include <optional>
#include <string>
#include <utility>

#include "grammar/aggregate.h"
#include "grammar/expression.h"
#include "grammar/lexer.h"
#include "grammar/names.h"
#include "grammar/select_item.h"
#include "grammar/token_cursor.h"
#include "grammar/transform_parser.h"

namespace trellis::grammar {
namespace {

using Result = std::variant<Statement, ParseError>;

constexpr std::string_view kStatementKeywords = "TRANSFORM, PAUSE, RESUME, DROP or ALTER";

// Wraps a sub-parser's result into a Statement result.
template <typename T>
Result Lift(std::variant<T, ParseError> result) {
  if (auto* error = std::get_if<ParseError>(&result)) return std::move(*error);
  return Statement(std::get<T>(std::move(result)));
}

std::optional<ParseError> ExpectTransformKeyword(TokenCursor& cursor, std::string_view after) {
  if (!cursor.AtKeyword("transform")) {
    return cursor.Expected("TRANSFORM after " + std::string(after));
  }
  cursor.Advance();
  return std::nullopt;
}

// PAUSE TRANSFORM address | RESUME TRANSFORM address
template <typename T>
Result ParsePauseOrResume(TokenCursor& cursor, std::string_view keyword) {
  cursor.Advance();
  if (auto error = ExpectTransformKeyword(cursor, keyword)) return *error;
  auto address = ParseAddress(cursor);
  if (auto* error = std::get_if<ParseError>(&address)) return *error;
  if (auto error = cursor.ExpectEnd("end of statement after the address")) return *error;
  return T{std::get<std::vector<std::string>>(std::move(address))};
}

Result ParseDrop(TokenCursor& cursor) {
  cursor.Advance();
  if (auto error = ExpectTransformKeyword(cursor, "DROP")) return *error;
  auto target = ParseQualifiedName(cursor, "the target table name after TRANSFORM");
  if (auto* error = std::get_if<ParseError>(&target)) return *error;
  if (auto error = cursor.ExpectEnd("end of statement after the target name")) return *error;
  return DropStmt{std::get<QualifiedName>(std::move(target))};
}

// The `COLUMN name` after ADD, DROP or ALTER in ALTER TRANSFORM.
std::variant<std::string, ParseError> ParseColumnKeywordAndName(TokenCursor& cursor,
                                                                std::string_view action) {
  cursor.Advance();
  if (!cursor.AtKeyword("column")) return cursor.Expected("COLUMN after " + std::string(action));
  cursor.Advance();
  return ParseName(cursor, "the column name after " + std::string(action) + " COLUMN");
}

// An ALTER's column that computes over aggregates (`sum(a) / count(*)`): a
// transform with one is compiled into stages when defined, and ALTER does
// not recompile it.
ParseError RefuseComputedColumn(const TokenCursor& cursor, std::size_t at) {
  return cursor.UnsupportedAt(
      at,
      "ALTER TRANSFORM cannot add or change a column computed over aggregates (an expression "
      "such as sum(a) / count(*)): DROP TRANSFORM and define it again with the column");
}

// ALTER TRANSFORM target ADD COLUMN expr AS col (or a bare column reference)
Result ParseAlterAdd(TokenCursor& cursor, QualifiedName target) {
  cursor.Advance();
  if (!cursor.AtKeyword("column")) return cursor.Expected("COLUMN after ADD");
  cursor.Advance();
  const std::size_t at = cursor.Peek().begin;
  auto parsed = ParseSelectItem(cursor, "an expression after ADD COLUMN", AggregateContext::kAlter);
  if (auto* error = std::get_if<ParseError>(&parsed)) return *error;
  if (std::get<ParsedSelectItem>(parsed).item.ComputesOverAggregates()) {
    return RefuseComputedColumn(cursor, at);
  }
  if (auto error = cursor.ExpectEnd("end of statement after the column alias")) return *error;
  return AlterAddColumnStmt{std::move(target), std::get<ParsedSelectItem>(std::move(parsed)).item};
}

// ALTER TRANSFORM target DROP COLUMN col
Result ParseAlterDrop(TokenCursor& cursor, QualifiedName target) {
  auto column = ParseColumnKeywordAndName(cursor, "DROP");
  if (auto* error = std::get_if<ParseError>(&column)) return *error;
  if (auto error = cursor.ExpectEnd("end of statement after the column name")) return *error;
  return AlterDropColumnStmt{std::move(target), std::get<std::string>(std::move(column))};
}

// ALTER TRANSFORM target ALTER COLUMN col AS expr
Result ParseAlterColumn(TokenCursor& cursor, QualifiedName target) {
  auto column = ParseColumnKeywordAndName(cursor, "ALTER");
  if (auto* error = std::get_if<ParseError>(&column)) return *error;
  if (!cursor.AtKeyword("as")) {
    return cursor.Expected("AS and the new expression after the column name");
  }
  cursor.Advance();
  auto expr = ScanExpression(cursor, "an expression after AS");
  if (auto* error = std::get_if<ParseError>(&expr)) return *error;
  auto& span = std::get<ExprSpan>(expr);
  auto aggregates = ReadAggregates(cursor, span, AggregateContext::kAlter);
  if (auto* error = std::get_if<ParseError>(&aggregates)) return *error;
  auto& read = std::get<AggregatesRead>(aggregates);
  if (!read.whole && !read.uses.empty()) return RefuseComputedColumn(cursor, span.position);
  if (auto error = cursor.ExpectEnd("end of statement after the expression")) return *error;
  return AlterColumnStmt{std::move(target),
                         SelectItem{std::move(span.text), std::get<std::string>(std::move(column)),
                                    span.position, std::move(read.whole), std::move(read.uses)}};
}

Result ParseAlter(TokenCursor& cursor) {
  cursor.Advance();
  if (auto error = ExpectTransformKeyword(cursor, "ALTER")) return *error;
  auto parsed = ParseQualifiedName(cursor, "the target table name after TRANSFORM");
  if (auto* error = std::get_if<ParseError>(&parsed)) return *error;
  QualifiedName target = std::get<QualifiedName>(std::move(parsed));
  if (cursor.AtKeyword("add")) return ParseAlterAdd(cursor, std::move(target));
  if (cursor.AtKeyword("drop")) return ParseAlterDrop(cursor, std::move(target));
  if (cursor.AtKeyword("alter")) return ParseAlterColumn(cursor, std::move(target));
  return cursor.Expected("ADD COLUMN, DROP COLUMN or ALTER COLUMN after the target name");
}

}  // namespace

std::variant<Statement, ParseError> Parse(std::string_view text) {
  TokenCursor cursor(text);
  const bool only_semicolon = cursor.AtPunctuation(";") && cursor.Peek(1).kind == TokenKind::kEnd;
  if (cursor.Peek().kind == TokenKind::kEnd || only_semicolon) {
    return cursor.ErrorAt(0, "empty statement: expected " + std::string(kStatementKeywords));
  }
  if (cursor.AtKeyword("transform")) {
    cursor.Advance();
    return Lift(ParseTransform(cursor));
  }
  if (cursor.AtKeyword("pause")) return ParsePauseOrResume<PauseStmt>(cursor, "PAUSE");
  if (cursor.AtKeyword("resume")) return ParsePauseOrResume<ResumeStmt>(cursor, "RESUME");
  if (cursor.AtKeyword("drop")) return ParseDrop(cursor);
  if (cursor.AtKeyword("alter")) return ParseAlter(cursor);
  return cursor.Expected(kStatementKeywords);
}

}  // namespace trellis::grammar
