// Aggregate calls in SELECT items (spec/grammar.md, "Aggregates"). Trellis
// does not parse expressions, but it must know which SELECT items are
// aggregates, and refuse the aggregate forms it cannot maintain, before
// anything reaches PostgreSQL. It does so from an expression's tokens.
#pragma once

#include <optional>
#include <string_view>
#include <variant>

#include "grammar/ast.h"
#include "grammar/expression.h"
#include "grammar/parse_error.h"
#include "grammar/token_cursor.h"

namespace trellis::grammar {

// The function's SQL name: "count", "sum", "avg", "min", "max", "bool_and",
// "bool_or".
std::string_view AggregateName(AggregateFunction function);

// The aggregate call `expr` is, if it is one: `count(*)`, `count(x)`,
// `sum(x)`, `avg(x)`, `min(x)`, `max(x)`, `bool_and(x)` (or `every(x)`),
// `bool_or(x)`, with the name plain, quoted or qualified by pg_catalog.
// Refused, with a message saying what to write instead:
// - kUnsupported: FILTER, OVER (window functions), DISTINCT or ORDER BY
//   inside the call, an aggregate of an aggregate, an aggregate inside a
//   larger expression (`sum(x) + 1`);
// - kSyntax: a call with the wrong number of arguments, `*` for anything
//   but count.
// Expressions without an aggregate call give nullopt (a window function in
// one is refused all the same).
std::variant<std::optional<AggregateCall>, ParseError> ReadAggregate(const TokenCursor& cursor,
                                                                     const ExprSpan& expr);

// Refuses an aggregate call or window function anywhere in `expr`, an
// expression of `clause` ("WHERE", "GROUP BY"), where SQL allows neither.
std::optional<ParseError> RefuseAggregates(const TokenCursor& cursor, const ExprSpan& expr,
                                           std::string_view clause);

}  // namespace trellis::grammar
