// Aggregate calls in SELECT items (spec/grammar.md, "Aggregates"). Trellis
// does not parse expressions, but it must know which SELECT items are
// aggregates, and refuse the aggregate forms it cannot maintain, before
// anything reaches PostgreSQL. It does so from an expression's tokens.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "grammar/ast.h"
#include "grammar/expression.h"
#include "grammar/parse_error.h"
#include "grammar/token_cursor.h"

namespace trellis::grammar {

// The function's SQL name: "count", "sum", "avg", "min", "max", "bool_and",
// "bool_or".
std::string_view AggregateName(AggregateFunction function);

// The name `call` is written with: AggregateName, or a recomputed call's
// own ("string_agg").
std::string CallName(const AggregateCall& call);

// The aggregate calls in an expression: each call not inside another, with
// its span relative to the expression's text, and the call the whole
// expression is, when it is one call and nothing else.
struct AggregatesRead {
  std::optional<AggregateCall> whole;
  std::vector<AggregateUse> uses;
};

// Where an expression is read, which decides what `DISTINCT` inside a call
// means: a TRANSFORM's SELECT list and HAVING compile count/sum/avg(DISTINCT
// x) into stages (plan/distinct_aggregate_stages.h); a subquery in WHERE and
// ALTER TRANSFORM refuse it, each saying what to write there instead.
enum class AggregateContext { kStatement, kSubquery, kAlter };

// The aggregate calls in `expr`: `count(*)`, `count(x)`, `sum(x)`, `avg(x)`,
// `min(x)`, `max(x)`, `bool_and(x)` (or `every(x)`), `bool_or(x)`, with the
// name plain, quoted or qualified by pg_catalog, anywhere in the expression
// (`sum(a) / nullif(count(*), 0)`); in kStatement also `count(DISTINCT x)`,
// `sum(DISTINCT x)` and `avg(DISTINCT x)`, and the aggregates kept by
// recompute of their group (grammar/recomputed_aggregate.h), read as
// written. Refused, with a message saying what to write instead:
// - kUnsupported: FILTER, OVER (window functions), ORDER BY inside a call
//   other than a recomputed one, an aggregate of an aggregate, DISTINCT
//   outside kStatement or in min, max, bool_and or bool_or (where it
//   changes nothing), a recomputed aggregate outside kStatement, an
//   order-sensitive one (string_agg, array_agg, ...) without ORDER BY;
// - kSyntax: a call with the wrong number of arguments, `*` for anything
//   but count.
// An expression without an aggregate call gives no uses (a window function
// in one is refused all the same).
std::variant<AggregatesRead, ParseError> ReadAggregates(
    const TokenCursor& cursor, const ExprSpan& expr,
    AggregateContext context = AggregateContext::kStatement);

// Refuses an aggregate call or window function anywhere in `expr`, an
// expression of `clause` ("WHERE", "GROUP BY"), where SQL allows neither.
std::optional<ParseError> RefuseAggregates(const TokenCursor& cursor, const ExprSpan& expr,
                                           std::string_view clause);

}  // namespace trellis::grammar
