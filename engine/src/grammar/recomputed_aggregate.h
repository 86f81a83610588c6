// The aggregates a GROUP BY transform keeps by recomputing each group a
// change touches, rather than by an algebraic rule (spec/grammar.md section
// 11, "Aggregates kept by recompute"): string_agg, array_agg, the JSON and
// XML aggregates, bit_and/bit_or/bit_xor, the statistics aggregates
// (stddev, variance, corr, regr_*). Each is read as an AggregateCall of
// function kRecomputed whose `name` is the function's and whose `argument`
// is everything between its parentheses (a DISTINCT, the arguments, an
// ORDER BY), passed to PostgreSQL as written.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/ast.h"

namespace trellis::grammar {

// True for the name of an aggregate kept by recompute ("string_agg").
bool IsRecomputedAggregate(std::string_view name);

// True for one whose result depends on the order it reads its rows in
// (string_agg, array_agg, json_agg, ...): the call must say the order with
// ORDER BY inside its parentheses.
bool IsOrderSensitiveAggregate(std::string_view name);

// Every aggregate name kept by recompute, in the order spec/grammar.md
// lists them.
std::vector<std::string_view> RecomputedAggregateNames();

// The refusal of a recomputed call's inside text `inside` (what is between
// the parentheses of `name`(...)), or nullopt when it is kept: an
// order-sensitive aggregate without a top-level ORDER BY is refused, naming
// the fix. `inside` is not empty.
std::optional<std::string> RecomputedCallRefusal(std::string_view name, std::string_view inside);

// The expressions `call` evaluates over each source row: its argument, or
// for a recomputed call each of its arguments and ORDER BY keys (without
// DISTINCT, ASC/DESC, NULLS FIRST/LAST or USING). Empty for count(*). The
// checks made on per-row expressions (no volatile function, the source
// columns read) take these.
std::vector<std::string> RowExpressions(const AggregateCall& call);

}  // namespace trellis::grammar
