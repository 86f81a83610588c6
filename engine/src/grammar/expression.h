// Finds where an embedded SQL expression ends. Trellis does not parse SQL
// expressions: it captures their text for PostgreSQL to validate at define
// time, and only needs their boundaries (spec/grammar.md, "Expressions").
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <variant>

#include "grammar/parse_error.h"
#include "grammar/token_cursor.h"

namespace trellis::grammar {

// An expression's exact source text, from its first token to its last (so
// surrounding whitespace and comments are not part of it), and the byte
// offset of its first token.
struct ExprSpan {
  std::string text;
  std::size_t position = 0;
};

// Scans tokens from the cursor's position up to, not including, the first
// delimiter outside brackets: `,`, `;`, end of statement, or the keywords AS,
// WHERE, GROUP BY, WITHOUT SOURCE (a keyword right after `.` is a column
// name, not a delimiter). Brackets ( ) and [ ] must balance, and `;` may not
// appear inside them. An empty expression is an error reading
// "expected <what>, found ...".
std::variant<ExprSpan, ParseError> ScanExpression(TokenCursor& cursor, std::string_view what);

}  // namespace trellis::grammar
