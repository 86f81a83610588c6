// The lexer: splits a statement into tokens following PostgreSQL's lexical
// rules closely enough to find where names, keywords and expressions begin
// and end (spec/grammar.md, "Lexical rules"). Whitespace and comments are
// skipped; they never become tokens.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace trellis::grammar {

enum class TokenKind {
  kIdentifier,        // plain identifier or keyword; value is folded to lower case
  kQuotedIdentifier,  // "..."; value is the name with "" undoubled
  kString,            // '...', E'...', $tag$...$tag$
  kNumber,
  kParameter,    // $1
  kOperator,     // a run of + - * / < > = ~ ! @ # % ^ & | ` ?
  kPunctuation,  // ( ) [ ] , ; . : ::
  kOther,        // any other single byte; PostgreSQL judges it later
  kEnd,          // end of the statement text
  kError,        // a lexical error; value is its description
};

// One token: its kind, the byte range [begin, end) it covers in the
// statement, and its value (see TokenKind; the raw text for the others).
struct Token {
  TokenKind kind = TokenKind::kEnd;
  std::size_t begin = 0;
  std::size_t end = 0;
  std::string value;
};

// Splits `text` into tokens. The result always ends with exactly one kEnd
// or kError token; lexing stops at the first error, so the parser reports
// it only if it gets that far.
std::vector<Token> Tokenize(std::string_view text);

}  // namespace trellis::grammar
