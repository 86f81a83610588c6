// Parsing of `JOIN table [AS alias] ON f.a = j.b [AND ...]`
// (spec/grammar.md, "JOIN").
#pragma once

#include <variant>

#include "grammar/ast.h"
#include "grammar/parse_error.h"
#include "grammar/token_cursor.h"

namespace trellis::grammar {

// REQUIRES: the cursor is on JOIN. Each equality must compare a column of
// `from` with a column of the joined table, in either order; the pairs come
// out FROM column first.
std::variant<JoinClause, ParseError> ParseJoin(TokenCursor& cursor, const TableRef& from);

}  // namespace trellis::grammar
