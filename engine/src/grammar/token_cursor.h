// A read position over one statement's tokens, with the helpers the parser
// and the expression scanner share: lookahead, keyword tests and
// "expected X, found Y" errors. Tokens are lexed as the parser reaches them
// and dropped once it has moved past, so memory stays proportional to the
// lookahead, not to the statement (a 1 MB statement may hold a million
// tokens). Not thread-safe; one per Parse call.
#pragma once

#include <cstddef>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/lexer.h"
#include "grammar/parse_error.h"

namespace trellis::grammar {

class TokenCursor {
 public:
  // REQUIRES: `text` outlives the cursor.
  explicit TokenCursor(std::string_view text);

  // The token `ahead` places after the current one; past the end, the final
  // kEnd or kError token. The reference is valid until the cursor advances
  // past that token.
  const Token& Peek(std::size_t ahead = 0) const;

  // Returns the current token and moves past it (never past the final
  // token). The reference is valid until the next Advance().
  const Token& Advance();

  // True if the token `ahead` is the unquoted keyword `word` (lower case).
  bool AtKeyword(std::string_view word, std::size_t ahead = 0) const;

  // True if the token `ahead` is the punctuation `mark`, e.g. "(" or ";".
  bool AtPunctuation(std::string_view mark, std::size_t ahead = 0) const;

  // The source text of `token`.
  std::string_view Text(const Token& token) const;
  std::string_view Statement() const { return text_; }

  // An error at byte `position`.
  ParseError ErrorAt(std::size_t position, std::string_view what) const;

  // An error of kind kUnsupported at byte `position`: a form that is valid
  // SQL but that Trellis does not maintain.
  ParseError UnsupportedAt(std::size_t position, std::string_view what) const;

  // "expected <expected>, found <current token>" at the current token; if
  // the current token is a lexical error, that error instead.
  ParseError Expected(std::string_view expected) const;

  // Accepts an optional ';' and then requires the end of the statement.
  // Otherwise returns "expected <expected>, found ..." (after a ';':
  // "expected end of statement after ";", found ...").
  std::optional<ParseError> ExpectEnd(std::string_view expected);

  // How a token reads in an error message: `"FORM"` or `end of statement`.
  std::string Describe(const Token& token) const;

  // Inside a query in parentheses (a WITH query or a query in FROM,
  // grammar/derived.h) a ")" outside an expression's own brackets ends the
  // expression and the query: ScanExpression stops there.
  void EnterQuery() { ++queries_; }
  void LeaveQuery() { --queries_; }
  bool InQuery() const { return queries_ > 0; }

 private:
  std::string_view text_;
  // Lexing on demand is not a visible change of state, so Peek stays const.
  mutable Lexer lexer_;
  mutable std::deque<Token> ahead_;  // the current token first; never empty after Peek
  Token previous_;                   // the token Advance() returned last
  int queries_ = 0;                  // queries in parentheses the cursor is in
};

}  // namespace trellis::grammar
