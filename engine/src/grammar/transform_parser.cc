#include "grammar/transform_parser.h"

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "grammar/expression.h"
#include "grammar/join.h"
#include "grammar/names.h"

namespace trellis::grammar {
namespace {

class TransformParser {
 public:
  explicit TransformParser(TokenCursor& cursor) : cursor_(cursor) {}

  std::variant<TransformStmt, ParseError> Run() {
    if (auto error = ParseTables()) return *error;
    if (auto error = ParseSelectList()) return *error;
    std::string_view expected =
        "\",\", WHERE, GROUP BY, WITHOUT SOURCE INDEX or end of statement after the column alias";
    if (cursor_.AtKeyword("where")) {
      if (auto error = ParseWhere()) return *error;
      expected = "GROUP BY, WITHOUT SOURCE INDEX or end of statement after the WHERE predicate";
    }
    if (cursor_.AtKeyword("group")) {
      if (auto error = ParseGroupBy()) return *error;
      expected = "\",\", WITHOUT SOURCE INDEX or end of statement after the GROUP BY expression";
    }
    if (cursor_.AtKeyword("without")) {
      if (auto error = ParseWithoutSourceIndex()) return *error;
      expected = "end of statement after WITHOUT SOURCE INDEX";
    }
    if (auto error = cursor_.ExpectEnd(expected)) return *error;
    return statement_;
  }

 private:
  // target FROM source [[AS] alias] [JOIN ...]
  std::optional<ParseError> ParseTables() {
    auto target = ParseQualifiedName(cursor_, "the target table name after TRANSFORM");
    if (auto* error = std::get_if<ParseError>(&target)) return *error;
    statement_.target = std::get<QualifiedName>(std::move(target));
    if (!cursor_.AtKeyword("from")) return cursor_.Expected("FROM after the target name");
    cursor_.Advance();
    auto source = ParseQualifiedName(cursor_, "the source table name after FROM");
    if (auto* error = std::get_if<ParseError>(&source)) return *error;
    statement_.source.table = std::get<QualifiedName>(std::move(source));
    auto alias = ParseOptionalAlias(cursor_);
    if (auto* error = std::get_if<ParseError>(&alias)) return *error;
    statement_.source.alias = std::get<std::optional<std::string>>(std::move(alias));
    if (!cursor_.AtKeyword("join")) return std::nullopt;
    auto join = ParseJoin(cursor_, statement_.source);
    if (auto* error = std::get_if<ParseError>(&join)) return *error;
    statement_.join = std::get<JoinClause>(std::move(join));
    return std::nullopt;
  }

  // SELECT expr AS alias [, ...]
  std::optional<ParseError> ParseSelectList() {
    if (!cursor_.AtKeyword("select")) {
      return cursor_.Expected(statement_.join ? "AND or SELECT after the JOIN condition"
                                              : "JOIN or SELECT after the source table");
    }
    cursor_.Advance();
    if (AtSelectListEnd()) {
      const Token& found = cursor_.Peek();
      return cursor_.ErrorAt(found.begin,
                             "empty SELECT list: expected an expression AS column after SELECT, "
                             "found " +
                                 cursor_.Describe(found));
    }
    // Alias -> where it was first written, to point at both in the error.
    std::map<std::string, std::size_t> aliases;
    while (true) {
      auto expr = ScanExpression(cursor_, statement_.select.empty() ? "an expression after SELECT"
                                                                    : "an expression after \",\"");
      if (auto* error = std::get_if<ParseError>(&expr)) return *error;
      if (!cursor_.AtKeyword("as")) {
        return cursor_.Expected("AS and a column alias after the expression");
      }
      cursor_.Advance();
      const std::size_t alias_position = cursor_.Peek().begin;
      auto alias = ParseName(cursor_, "a column alias after AS");
      if (auto* error = std::get_if<ParseError>(&alias)) return *error;
      std::string& name = std::get<std::string>(alias);
      auto [first, inserted] = aliases.emplace(name, alias_position);
      if (!inserted) {
        return cursor_.ErrorAt(alias_position, "duplicate column alias \"" + name +
                                                   "\" (first used at position " +
                                                   std::to_string(first->second) + ")");
      }
      auto& span = std::get<ExprSpan>(expr);
      statement_.select.push_back(SelectItem{std::move(span.text), std::move(name), span.position});
      if (!cursor_.AtPunctuation(",")) return std::nullopt;
      cursor_.Advance();
    }
  }

  bool AtSelectListEnd() const {
    return cursor_.Peek().kind == TokenKind::kEnd || cursor_.AtPunctuation(";") ||
           cursor_.AtKeyword("where") ||
           (cursor_.AtKeyword("group") && cursor_.AtKeyword("by", 1)) ||
           (cursor_.AtKeyword("without") && cursor_.AtKeyword("source", 1));
  }

  std::optional<ParseError> ParseWhere() {
    cursor_.Advance();
    auto predicate = ScanExpression(cursor_, "a predicate after WHERE");
    if (auto* error = std::get_if<ParseError>(&predicate)) return *error;
    statement_.where = std::get<ExprSpan>(std::move(predicate)).text;
    return std::nullopt;
  }

  std::optional<ParseError> ParseGroupBy() {
    cursor_.Advance();
    if (!cursor_.AtKeyword("by")) return cursor_.Expected("BY after GROUP");
    cursor_.Advance();
    while (true) {
      auto expr =
          ScanExpression(cursor_, statement_.group_by.empty() ? "an expression after GROUP BY"
                                                              : "an expression after \",\"");
      if (auto* error = std::get_if<ParseError>(&expr)) return *error;
      statement_.group_by.push_back(std::get<ExprSpan>(std::move(expr)).text);
      if (!cursor_.AtPunctuation(",")) return std::nullopt;
      cursor_.Advance();
    }
  }

  std::optional<ParseError> ParseWithoutSourceIndex() {
    cursor_.Advance();
    if (!cursor_.AtKeyword("source")) return cursor_.Expected("SOURCE after WITHOUT");
    cursor_.Advance();
    if (!cursor_.AtKeyword("index")) return cursor_.Expected("INDEX after WITHOUT SOURCE");
    cursor_.Advance();
    statement_.without_source_index = true;
    return std::nullopt;
  }

  TokenCursor& cursor_;
  TransformStmt statement_;
};

}  // namespace

std::variant<TransformStmt, ParseError> ParseTransform(TokenCursor& cursor) {
  return TransformParser(cursor).Run();
}

}  // namespace trellis::grammar
