// The entry point of Trellis's statement grammar (spec/grammar.md).
#pragma once

#include <string_view>
#include <variant>

#include "grammar/ast.h"
#include "grammar/parse_error.h"

namespace trellis::grammar {

// Parses one statement: TRANSFORM, PAUSE TRANSFORM, RESUME TRANSFORM, DROP
// TRANSFORM or ALTER TRANSFORM, with an optional trailing ';'. Never throws:
// a statement it refuses comes back as a ParseError. Pure; thread-safe.
std::variant<Statement, ParseError> Parse(std::string_view text);

}  // namespace trellis::grammar
