#include "grammar/token_cursor.h"

#include <algorithm>
#include <utility>

namespace trellis::grammar {
namespace {

// Long tokens (a big string literal) are cut in messages to keep them short.
constexpr std::size_t kMaxDescribedBytes = 40;

}  // namespace

TokenCursor::TokenCursor(std::string_view text) : text_(text), lexer_(text) {}

const Token& TokenCursor::Peek(std::size_t ahead) const {
  // std::deque keeps references to its elements valid across push_back.
  while (ahead_.size() <= ahead) {
    if (!ahead_.empty() &&
        (ahead_.back().kind == TokenKind::kEnd || ahead_.back().kind == TokenKind::kError)) {
      return ahead_.back();
    }
    ahead_.push_back(lexer_.Next());
  }
  return ahead_[ahead];
}

const Token& TokenCursor::Advance() {
  const Token& current = Peek();
  if (current.kind == TokenKind::kEnd || current.kind == TokenKind::kError) return current;
  previous_ = std::move(ahead_.front());
  ahead_.pop_front();
  return previous_;
}

bool TokenCursor::AtKeyword(std::string_view word, std::size_t ahead) const {
  const Token& token = Peek(ahead);
  return token.kind == TokenKind::kIdentifier && token.value == word;
}

bool TokenCursor::AtPunctuation(std::string_view mark, std::size_t ahead) const {
  const Token& token = Peek(ahead);
  return token.kind == TokenKind::kPunctuation && token.value == mark;
}

std::string_view TokenCursor::Text(const Token& token) const {
  return text_.substr(token.begin, token.end - token.begin);
}

ParseError TokenCursor::ErrorAt(std::size_t position, std::string_view what) const {
  return MakeParseError(text_, position, what);
}

ParseError TokenCursor::UnsupportedAt(std::size_t position, std::string_view what) const {
  ParseError error = ErrorAt(position, what);
  error.kind = ParseError::Kind::kUnsupported;
  return error;
}

ParseError TokenCursor::Expected(std::string_view expected) const {
  const Token& token = Peek();
  if (token.kind == TokenKind::kError) return ErrorAt(token.begin, token.value);
  return ErrorAt(token.begin, "expected " + std::string(expected) + ", found " + Describe(token));
}

std::optional<ParseError> TokenCursor::ExpectEnd(std::string_view expected) {
  if (AtPunctuation(";")) {
    Advance();
    if (Peek().kind != TokenKind::kEnd) return Expected("end of statement after \";\"");
    return std::nullopt;
  }
  if (Peek().kind != TokenKind::kEnd) return Expected(expected);
  return std::nullopt;
}

std::string TokenCursor::Describe(const Token& token) const {
  if (token.kind == TokenKind::kEnd) return "end of statement";
  std::string_view text = Text(token);
  std::string shown(text.substr(0, kMaxDescribedBytes));
  if (text.size() > kMaxDescribedBytes) shown += "...";
  return "\"" + shown + "\"";
}

}  // namespace trellis::grammar
