// Subqueries in WHERE (spec/grammar.md, "Subqueries in WHERE"). Trellis
// does not parse expressions, but a subquery must be found, its form known
// (EXISTS, NOT EXISTS, IN, NOT IN, a comparison to a scalar aggregate), and
// its correlation with the statement read, before the engine compiles it
// into stages (plan/subquery_stages.h). It does so from the WHERE's tokens,
// and refuses, by name and with the fix, each form it cannot compile.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "grammar/ast.h"
#include "grammar/expression.h"
#include "grammar/parse_error.h"
#include "grammar/token_cursor.h"

namespace trellis::grammar {

// The subqueries of the WHERE condition `where`, of a statement whose tables
// have the qualifiers `tables` (the FROM table first, then each joined
// table). None when it has none; then, and outside every subquery, an
// aggregate or window function is refused as in any WHERE.
//
// Each subquery must be a condition of its own in WHERE's top-level AND, of
// one of the forms of WhereSubquery, over one table (`FROM t [alias] [WHERE
// ...]`) or over a query of its own (WhereSubquery::body: its FROM joins
// tables, or its WHERE holds subqueries), correlated with at most one
// table of the statement and only by equalities `inner = q.column` AND-ed
// in its WHERE. Refused (kUnsupported, naming the fix): a subquery under
// OR or NOT (but NOT EXISTS and NOT IN), two in one condition, one inside
// another's SELECT item, `op ANY/ALL (...)`, a comma list in its FROM,
// GROUP BY and the other clauses in a subquery, any other correlation, an
// aggregate in an EXISTS or IN subquery, a scalar subquery without one,
// and whatever its own query could not be as a TRANSFORM.
std::variant<std::vector<WhereSubquery>, ParseError> ReadWhereSubqueries(
    const TokenCursor& cursor, const ExprSpan& where, const std::vector<std::string>& tables);

// What a message calls subquery `sq`: "the subquery at position N", or
// the name the parser gave it (WhereSubquery::named).
std::string SubqueryWords(const WhereSubquery& sq);

// The subqueries of a HAVING condition (TPC-H Q11's `sum(x) > (SELECT
// sum(x) * 0.0001 FROM ...)`), read as ReadWhereSubqueries reads a WHERE's,
// but aggregates outside them are the statement's, and each must be
// uncorrelated (it may read only its own tables) and compared or tested by
// EXISTS or NOT EXISTS; IN, NOT IN and correlations are refused by name.
std::variant<std::vector<WhereSubquery>, ParseError> ReadHavingSubqueries(
    const TokenCursor& cursor, const ExprSpan& having, const std::vector<std::string>& tables);

// The bytes [begin, end) of `expr`'s text each subquery's brackets cover,
// from its "(" to the ")" closing it, in order (one inside another is
// within it and not listed).
std::vector<std::pair<std::size_t, std::size_t>> SubqueryBrackets(const ExprSpan& expr);

// Where the first subquery (`(SELECT`) of `expr` begins, as an offset into
// its text; none when it has no subquery. For the clauses that take none
// (HAVING), which must refuse it by name before their aggregates are read:
// an aggregate inside the subquery is not the statement's.
std::optional<std::size_t> FirstSubquery(const ExprSpan& expr);

}  // namespace trellis::grammar
