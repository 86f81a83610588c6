// Aggregates over DISTINCT values (issue 26; spec/engine.md "Compiled
// stages: DISTINCT aggregates"). count(DISTINCT x), sum(DISTINCT x) and
// avg(DISTINCT x) cannot be kept from row changes alone: deleting a row
// with x = 5 changes count(DISTINCT x) only if no other row of its group
// has 5. A statement such as
//
//   TRANSFORM r FROM orders o
//     SELECT o.region, count(DISTINCT o.customer_id) AS customers,
//            sum(o.amount) AS total
//     GROUP BY o.region HAVING count(*) > 5
//
// is compiled into statements of kinds the engine maintains:
// - a hidden grouping (`__trellis_distinct_<n>`, its target in the catalog
//   schema) by the statement's groups and the distinct argument x: one row
//   per group and value, x in `trellis_dv` (NULL x is a row of its own,
//   so a group whose x are all NULL still exists), and a partial of each
//   plain aggregate call (`trellis_dp<k>`);
// - the user's statement over that target, itself a grouping by the
//   groups compiled into a hidden grouping and a projection
//   (aggregate_stages.h): count(DISTINCT x) is count(trellis_dv) (which
//   skips the NULL row, as DISTINCT aggregates skip NULL), sum and avg
//   (DISTINCT x) are sum and avg of trellis_dv, and each plain call is
//   combined from its partials and cast back to the type PostgreSQL gives
//   it (count: the sum of counts, 0 for none; sum: the sum of sums; avg: the
//   sum of sums over the sum of counts; min, max, bool_and, bool_or: the
//   same function of the partials).
// One grouping over the source, keyed by (groups, x), serves both the
// distinct values and the plain aggregates, so no second grouping over the
// source and no join back on the group key are needed; a join on the group
// key could not match a NULL group either (`=` never matches NULL).
// Every DISTINCT call of one statement takes the same argument.
//
// Pure functions: the define half is distinct_aggregate_stages_define.h.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/ast.h"
#include "trellis/status.h"

namespace trellis::plan {

// The prefix of the hidden grouping by distinct values; the rest is a
// number no transform has had.
inline constexpr std::string_view kHiddenDistinctPrefix = "__trellis_distinct_";

// The alias the user's statement reads that grouping's target by: a plain
// name, since the statement is a grouping, whose alias may not start with
// __trellis_ (the statement reads nothing else, so no name of the user's
// can clash with it).
inline constexpr std::string_view kHiddenDistinctAlias = "trellis_dst";

// The start of the names of the hidden grouping's own columns, the distinct
// argument's value (`<prefix>v`) and the partials (`<prefix>p<k>`): plain
// names (a group's columns may not start with __trellis_), so one that no
// SELECT item's name of `stmt` starts with, "trellis_d" with as many "_"
// after it as that takes.
std::string DistinctColumnPrefix(const grammar::TransformStmt& stmt);

// The plain (not DISTINCT) sum and avg calls of `stmt`, each once: the
// compile casts their combined values to the types PostgreSQL gives them.
std::vector<grammar::AggregateCall> CallsNeedingTypes(const grammar::TransformStmt& stmt);

// The type of each call CallsNeedingTypes gives, by its CallText
// (grouped_rewrite.h): "bigint", "numeric", "double precision", ...
using CallTypes = std::map<std::string, std::string>;

// The two statements a statement with HasDistinctAggregates() becomes.
struct DistinctAggregateStages {
  grammar::TransformStmt values;  // the hidden grouping by (groups, x)
  // The user's statement over `values`' target, as parsed (its aggregate
  // uses found): a grouping that define compiles into stages
  // (aggregate_stages_define.h), also when it has no expression over
  // aggregates, so that the user's transform is always a projection.
  grammar::TransformStmt owner;
};

// Compiles `stmt` (REQUIRES: stmt.HasDistinctAggregates(), no subqueries)
// over the hidden grouping `hidden`, with `types` for CallsNeedingTypes.
// Refuses (unsupported, naming the fix) DISTINCT calls over two different
// arguments; (validation) what the rewrite of a grouped statement refuses
// (grouped_rewrite.h).
Result<DistinctAggregateStages> CompileDistinctAggregateStages(const grammar::TransformStmt& stmt,
                                                               const grammar::QualifiedName& hidden,
                                                               const CallTypes& types);

}  // namespace trellis::plan
