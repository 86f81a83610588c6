#include "grammar/parse_error.h"

#include <algorithm>

namespace trellis::grammar {
namespace {

bool IsUtf8Continuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

}  // namespace

ParseError MakeParseError(std::string_view text, std::size_t position, std::string_view what) {
  position = std::min(position, text.size());
  std::string message = "at position " + std::to_string(position);
  // Line and column only help when there is more than one line; a one-line
  // statement's position already is its column.
  if (text.find('\n') != std::string_view::npos) {
    std::size_t line = 1;
    std::size_t column = 1;
    for (std::size_t i = 0; i < position; ++i) {
      if (text[i] == '\n') {
        ++line;
        column = 1;
      } else if (!IsUtf8Continuation(text[i])) {
        ++column;
      }
    }
    message += " (line " + std::to_string(line) + ", column " + std::to_string(column) + ")";
  }
  message += ": ";
  message += what;
  return ParseError{position, std::move(message)};
}

}  // namespace trellis::grammar
