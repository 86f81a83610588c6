// Checking that a string argument is text PostgreSQL can take as it is.
//
// libpq passes strings as C strings, so a NUL byte silently ends the text
// (status("b_ok\0junk") would read "b_ok"), and the server refuses invalid
// UTF-8 with a database error that names no argument. The port checks every
// string argument with FindTextFault before an op sees it.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace trellis::protocol {

// What is wrong with a string, and at which byte (0-based).
struct TextFault {
  std::size_t position = 0;
  std::string what;  // e.g. "a NUL byte", "an invalid UTF-8 sequence"
};

// The first NUL byte or invalid UTF-8 sequence (RFC 3629: no overlong forms,
// no surrogates, nothing above U+10FFFF, no truncated sequence) in `text`;
// nullopt when it is clean.
std::optional<TextFault> FindTextFault(std::string_view text);

}  // namespace trellis::protocol
