#include "grammar/lexer.h"

#include <string_view>

namespace trellis::grammar {
namespace {

bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

bool IsHighBit(char c) { return static_cast<unsigned char>(c) >= 0x80; }

// PostgreSQL lets identifiers contain any byte with the high bit set, so
// names in UTF-8 need no quotes.
bool IsIdentStart(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_' || IsHighBit(c);
}

bool IsIdentContinue(char c) { return IsIdentStart(c) || IsDigit(c) || c == '$'; }

// Dollar-quote tags are identifiers without '$'.
bool IsTagContinue(char c) { return IsIdentStart(c) || IsDigit(c); }

bool IsOperatorChar(char c) {
  return std::string_view("+-*/<>=~!@#%^&|`?").find(c) != std::string_view::npos;
}

bool IsPunctuation(char c) {
  return std::string_view("()[],;.:").find(c) != std::string_view::npos;
}

char FoldAscii(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

}  // namespace

// Finds the next token of one statement from a position. Each Lex* method
// starts at pos_ on the token's first byte and leaves pos_ just past it.
class Lexer::Scanner {
 public:
  Scanner(std::string_view text, std::size_t pos) : text_(text), pos_(pos) {}

  Token Scan() {
    if (!SkipSpaceAndComments()) return std::move(error_);
    return Next();
  }
  std::size_t pos() const { return pos_; }

 private:
  char At(std::size_t i) const { return i < text_.size() ? text_[i] : '\0'; }
  bool AtEnd() const { return pos_ >= text_.size(); }

  Token Make(TokenKind kind, std::size_t begin, std::string value) const {
    return Token{kind, begin, pos_, std::move(value)};
  }
  Token Raw(TokenKind kind, std::size_t begin) const {
    return Make(kind, begin, std::string(text_.substr(begin, pos_ - begin)));
  }
  Token Error(std::size_t begin, std::string message) const {
    return Token{TokenKind::kError, begin, begin, std::move(message)};
  }

  // Returns false (with error_ set) on an unterminated block comment or a
  // NUL byte in a comment: a NUL would cut the text short on its way to libpq.
  bool SkipSpaceAndComments() {
    while (!AtEnd()) {
      const char c = text_[pos_];
      if (IsSpace(c)) {
        ++pos_;
      } else if (c == '-' && At(pos_ + 1) == '-') {
        while (!AtEnd() && text_[pos_] != '\n' && text_[pos_] != '\r') {
          if (text_[pos_] == '\0') return Fail(Error(pos_, "unexpected NUL byte in a comment"));
          ++pos_;
        }
      } else if (c == '/' && At(pos_ + 1) == '*') {
        if (!SkipBlockComment()) return false;
      } else {
        return true;
      }
    }
    return true;
  }

  // Block comments nest, as in PostgreSQL: /* a /* b */ c */ is one comment.
  bool SkipBlockComment() {
    const std::size_t begin = pos_;
    int depth = 0;
    while (!AtEnd()) {
      if (text_[pos_] == '/' && At(pos_ + 1) == '*') {
        ++depth;
        pos_ += 2;
      } else if (text_[pos_] == '*' && At(pos_ + 1) == '/') {
        pos_ += 2;
        if (--depth == 0) return true;
      } else if (text_[pos_] == '\0') {
        return Fail(Error(pos_, "unexpected NUL byte in a comment"));
      } else {
        ++pos_;
      }
    }
    return Fail(Error(begin, "unterminated /* comment"));
  }

  bool Fail(Token error) {
    error_ = std::move(error);
    return false;
  }

  Token Next() {
    const std::size_t begin = pos_;
    if (AtEnd()) return Make(TokenKind::kEnd, begin, "");
    const char c = text_[pos_];
    if (c == '\0') return Error(begin, "unexpected NUL byte");
    if ((c == 'e' || c == 'E') && At(pos_ + 1) == '\'') {
      ++pos_;
      return LexString(begin, /*backslash_escapes=*/true);
    }
    if (IsIdentStart(c)) return LexIdentifier(begin);
    if (c == '"') return LexQuotedIdentifier(begin);
    if (c == '\'') return LexString(begin, /*backslash_escapes=*/false);
    if (c == '$') return LexDollar(begin);
    if (IsDigit(c) || (c == '.' && IsDigit(At(pos_ + 1)))) return LexNumber(begin);
    if (c == ':' && At(pos_ + 1) == ':') {
      pos_ += 2;
      return Raw(TokenKind::kPunctuation, begin);
    }
    if (IsPunctuation(c)) {
      ++pos_;
      return Raw(TokenKind::kPunctuation, begin);
    }
    if (IsOperatorChar(c)) return LexOperator(begin);
    ++pos_;
    return Raw(TokenKind::kOther, begin);
  }

  Token LexIdentifier(std::size_t begin) {
    std::string value;
    while (!AtEnd() && IsIdentContinue(text_[pos_])) value += FoldAscii(text_[pos_++]);
    return Make(TokenKind::kIdentifier, begin, std::move(value));
  }

  Token LexQuotedIdentifier(std::size_t begin) {
    std::string value;
    ++pos_;
    while (!AtEnd()) {
      const char c = text_[pos_++];
      if (c == '\0') return Error(pos_ - 1, "unexpected NUL byte in a quoted identifier");
      if (c != '"') {
        value += c;
      } else if (At(pos_) == '"') {
        value += '"';
        ++pos_;
      } else {
        if (value.empty()) return Error(begin, "zero-length quoted identifier \"\"");
        return Make(TokenKind::kQuotedIdentifier, begin, std::move(value));
      }
    }
    return Error(begin, "unterminated quoted identifier");
  }

  // '...' with '' for a quote; in E'...' a backslash also escapes the next
  // byte. pos_ is on the opening quote.
  Token LexString(std::size_t begin, bool backslash_escapes) {
    ++pos_;
    while (!AtEnd()) {
      const char c = text_[pos_++];
      if (c == '\0') return Error(pos_ - 1, "unexpected NUL byte in a string literal");
      if (backslash_escapes && c == '\\') {
        if (!AtEnd()) ++pos_;
      } else if (c == '\'') {
        if (At(pos_) != '\'') return Raw(TokenKind::kString, begin);
        ++pos_;
      }
    }
    return Error(begin, "unterminated string literal");
  }

  // $1 is a parameter; $$...$$ and $tag$...$tag$ are dollar-quoted strings.
  Token LexDollar(std::size_t begin) {
    ++pos_;
    if (IsDigit(At(pos_))) {
      while (IsDigit(At(pos_))) ++pos_;
      return Raw(TokenKind::kParameter, begin);
    }
    std::size_t tag_end = pos_;
    if (IsIdentStart(At(tag_end))) {
      while (tag_end < text_.size() && IsTagContinue(text_[tag_end])) ++tag_end;
    }
    if (At(tag_end) != '$') return Raw(TokenKind::kOther, begin);
    const std::string_view delimiter = text_.substr(begin, tag_end + 1 - begin);
    const std::size_t close = text_.find(delimiter, tag_end + 1);
    if (close == std::string_view::npos) {
      return Error(begin, "unterminated dollar-quoted string " + std::string(delimiter));
    }
    const std::size_t nul = text_.find('\0', tag_end + 1);
    if (nul < close) return Error(nul, "unexpected NUL byte in a string literal");
    pos_ = close + delimiter.size();
    return Raw(TokenKind::kString, begin);
  }

  // Digits, an optional fraction and exponent, '_' between digits. Letters
  // right after a number start a new token, as in PostgreSQL 15.
  Token LexNumber(std::size_t begin) {
    auto digits = [this] {
      while (IsDigit(At(pos_)) || (At(pos_) == '_' && IsDigit(At(pos_ + 1)))) ++pos_;
    };
    digits();
    // "1..2" is not a number with a fraction; leave the dots alone.
    if (At(pos_) == '.' && At(pos_ + 1) != '.') {
      ++pos_;
      digits();
    }
    if (At(pos_) == 'e' || At(pos_) == 'E') {
      std::size_t exponent = pos_ + 1;
      if (At(exponent) == '+' || At(exponent) == '-') ++exponent;
      if (IsDigit(At(exponent))) {
        pos_ = exponent;
        digits();
      }
    }
    return Raw(TokenKind::kNumber, begin);
  }

  // An operator ends where a comment starts, as in PostgreSQL.
  Token LexOperator(std::size_t begin) {
    while (!AtEnd() && IsOperatorChar(text_[pos_])) {
      if (pos_ > begin && ((text_[pos_] == '-' && At(pos_ + 1) == '-') ||
                           (text_[pos_] == '/' && At(pos_ + 1) == '*'))) {
        break;
      }
      ++pos_;
    }
    return Raw(TokenKind::kOperator, begin);
  }

  std::string_view text_;
  std::size_t pos_ = 0;
  Token error_;
};

Token Lexer::Next() {
  if (done_) return final_;
  Scanner scanner(text_, pos_);
  Token token = scanner.Scan();
  pos_ = scanner.pos();
  if (token.kind == TokenKind::kEnd || token.kind == TokenKind::kError) {
    done_ = true;
    final_ = token;
  }
  return token;
}

std::vector<Token> Tokenize(std::string_view text) {
  Lexer lexer(text);
  std::vector<Token> tokens;
  while (true) {
    tokens.push_back(lexer.Next());
    const TokenKind kind = tokens.back().kind;
    if (kind == TokenKind::kEnd || kind == TokenKind::kError) return tokens;
  }
}

}  // namespace trellis::grammar
