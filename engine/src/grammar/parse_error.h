// The error value Parse returns for a statement it refuses.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace trellis::grammar {

// `position` is the 0-based byte offset in the statement where the problem
// was found. `message` is complete and user-facing: it starts with
// "at position N: " (plus "(line L, column C)" when the statement spans
// several lines) and says what was expected and what was found.
struct ParseError {
  // kSyntax: the text is not a statement Trellis or PostgreSQL would take.
  // kUnsupported: valid SQL that Trellis does not maintain (HAVING, window
  // functions, ...); the message says what to write instead.
  enum class Kind { kSyntax, kUnsupported };

  std::size_t position = 0;
  std::string message;
  Kind kind = Kind::kSyntax;

  bool operator==(const ParseError&) const = default;
};

// Builds the error for `what` at byte `position` of `text`, adding the
// position prefix described above. Columns count UTF-8 characters, 1-based.
ParseError MakeParseError(std::string_view text, std::size_t position, std::string_view what);

}  // namespace trellis::grammar
