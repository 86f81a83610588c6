// Parsing of the joins after FROM: `[INNER | {LEFT | RIGHT | FULL}
// [OUTER]] JOIN table [AS alias] ON x.a = j.b [AND ...]`, repeated
// (spec/grammar.md, "JOIN"). Whether the joins have a table whose rows every
// target row holds (plan/join_tree.h) is the plan's question, not the
// grammar's. The join forms a transform cannot maintain (CROSS, NATURAL,
// USING, a comma list, a subquery, a condition that is not an AND of column
// equalities with one earlier table) are refused here by name.
#pragma once

#include <variant>
#include <vector>

#include "grammar/ast.h"
#include "grammar/parse_error.h"
#include "grammar/token_cursor.h"

namespace trellis::grammar {

// Parses every join that follows the FROM table `from`, stopping at the
// first token that starts no join (SELECT, or an error later on). Each
// join's equalities compare columns of the joined table with columns of
// exactly one table written before it; the pairs come out with that
// table's column first.
std::variant<std::vector<JoinClause>, ParseError> ParseJoins(TokenCursor& cursor,
                                                             const TableRef& from);

}  // namespace trellis::grammar
