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

// The token is the unquoted word `word` (the lexer folds unquoted words to
// lower case, so `word` is given in lower case).
inline bool IsWord(const Token& t, std::string_view word) {
  return t.kind == TokenKind::kIdentifier && t.value == word;
}

// The token is the punctuation mark `mark`.
inline bool IsMark(const Token& t, std::string_view mark) {
  return t.kind == TokenKind::kPunctuation && t.value == mark;
}

// The token can name something: a word, or a quoted identifier.
inline bool IsName(const Token& t) {
  return t.kind == TokenKind::kIdentifier || t.kind == TokenKind::kQuotedIdentifier;
}

// Reads the tokens of `text` one at a time, so a statement's tokens never
// all exist at once: a 1 MB statement can hold a million tokens, and the
// parser needs only a few of them ahead (TokenCursor). After the final kEnd
// or kError token, Next() returns it again.
// REQUIRES: `text` outlives the Lexer.
class Lexer {
 public:
  explicit Lexer(std::string_view text) : text_(text) {}
  // Reads `text` from byte `begin` on, which must be where a token begins
  // (or whitespace before one); positions stay offsets into `text`. To read
  // a part of a statement again, pass the statement cut where the part ends.
  Lexer(std::string_view text, std::size_t begin) : text_(text), pos_(begin) {}
  Token Next();

 private:
  class Scanner;
  std::string_view text_;
  std::size_t pos_ = 0;
  bool done_ = false;
  Token final_;
};

// Splits `text` into tokens. The result always ends with exactly one kEnd
// or kError token; lexing stops at the first error, so the parser reports
// it only if it gets that far. For tests and tools; the parser streams.
std::vector<Token> Tokenize(std::string_view text);

}  // namespace trellis::grammar
