#include "grammar/expression.h"

#include <cstdint>
#include <string>
#include <vector>

namespace trellis::grammar {
namespace {

// True when the current token ends an expression written at bracket depth 0.
bool AtDelimiter(const TokenCursor& cursor, bool after_dot) {
  const Token& token = cursor.Peek();
  if (token.kind == TokenKind::kEnd) return true;
  if (cursor.AtPunctuation(",") || cursor.AtPunctuation(";")) return true;
  return AtClauseKeyword(cursor, after_dot);
}

const char* Closer(std::string_view opener) { return opener == "(" ? ")" : "]"; }

}  // namespace

bool AtClauseKeyword(const TokenCursor& cursor, bool after_dot) {
  if (after_dot) return false;
  // Each of these is reserved in PostgreSQL, so none can start or continue
  // an expression outside brackets.
  static constexpr std::string_view kAlone[] = {"as",     "where", "having",    "limit",  "offset",
                                                "window", "union", "intersect", "except", "grant"};
  for (std::string_view word : kAlone) {
    if (cursor.AtKeyword(word)) return true;
  }
  return ((cursor.AtKeyword("group") || cursor.AtKeyword("order")) && cursor.AtKeyword("by", 1)) ||
         (cursor.AtKeyword("without") &&
          (cursor.AtKeyword("source", 1) || cursor.AtKeyword("row", 1)));
}

std::variant<ExprSpan, ParseError> ScanExpression(TokenCursor& cursor, std::string_view what) {
  // Open brackets not yet closed, innermost last. Copies, not references:
  // the cursor drops the tokens it has moved past. Eight bytes each, since a
  // statement may open a million of them (statements are far below 4 GiB).
  struct Opener {
    uint32_t begin;
    char mark;  // '(' or '['
    std::string Mark() const { return std::string(1, mark); }
  };
  std::vector<Opener> open;
  std::vector<Token> first_tokens;
  std::size_t token_count = 0;
  std::size_t end = 0;
  bool after_dot = false;
  while (true) {
    const Token& token = cursor.Peek();
    if (token.kind == TokenKind::kError) return cursor.ErrorAt(token.begin, token.value);
    if (open.empty() && AtDelimiter(cursor, after_dot)) break;
    if (open.empty() && cursor.InQuery() && cursor.AtPunctuation(")")) break;
    if (token.kind == TokenKind::kEnd) {
      const Opener& opener = open.back();
      return cursor.ErrorAt(opener.begin,
                            "unbalanced parentheses: \"" + opener.Mark() + "\" is never closed");
    }
    if (token.kind == TokenKind::kPunctuation) {
      if (token.value == "(" || token.value == "[") {
        open.push_back(Opener{static_cast<uint32_t>(token.begin), token.value[0]});
      } else if (token.value == ")" || token.value == "]") {
        if (open.empty()) {
          return cursor.ErrorAt(token.begin, "unbalanced parentheses: \"" + token.value +
                                                 "\" has no matching opening bracket");
        }
        if (token.value != Closer(open.back().Mark())) {
          return cursor.ErrorAt(token.begin, "unbalanced parentheses: \"" + token.value +
                                                 "\" cannot close \"" + open.back().Mark() +
                                                 "\" at position " +
                                                 std::to_string(open.back().begin));
        }
        open.pop_back();
      } else if (token.value == ";") {
        // No SQL expression holds a bare ';'; letting one through would let
        // a statement smuggle a second one into the SQL built from it.
        const Opener& opener = open.back();
        return cursor.ErrorAt(opener.begin, "unbalanced parentheses: \"" + opener.Mark() +
                                                "\" is not closed before \";\" at position " +
                                                std::to_string(token.begin));
      }
    }
    after_dot = token.kind == TokenKind::kPunctuation && token.value == ".";
    if (first_tokens.size() < ExprSpan::kKeptTokens) first_tokens.push_back(token);
    ++token_count;
    end = token.end;
    cursor.Advance();
  }
  if (token_count == 0) return cursor.Expected(what);
  const std::size_t begin = first_tokens.front().begin;
  const std::string_view statement = cursor.Statement();
  return ExprSpan{std::string(statement.substr(begin, end - begin)), begin, token_count,
                  std::move(first_tokens)};
}

}  // namespace trellis::grammar
