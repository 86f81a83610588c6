// Parsing of the TRANSFORM statement (spec/grammar.md, "TRANSFORM").
#pragma once

#include <variant>

#include "grammar/ast.h"
#include "grammar/parse_error.h"
#include "grammar/token_cursor.h"

namespace trellis::grammar {

// REQUIRES: the cursor is just past the TRANSFORM keyword. Parses the rest of
// the statement, through its end.
std::variant<TransformStmt, ParseError> ParseTransform(TokenCursor& cursor);

}  // namespace trellis::grammar
