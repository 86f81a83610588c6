// HAVING and expressions over aggregates (issue 26; spec/engine.md
// "Compiled stages"). One grouping transform keeps one aggregate per column
// and every group; a statement such as
//
//   TRANSFORM r FROM orders o
//     SELECT o.region, sum(o.amount) / nullif(count(*), 0) AS mean
//     GROUP BY o.region HAVING count(*) > 5
//
// is compiled into two statements of kinds the engine maintains:
// - a hidden grouping (`__trellis_group_<n>`, its target in the catalog
//   schema): the statement's FROM, joins, WHERE and GROUP BY, selecting each
//   GROUP BY item under its own name and each distinct aggregate call once,
//   as `__trellis_a<k>` (over a join it is itself a grouped join, so the
//   user's transform has three stages);
// - the user's transform, a projection over that target keyed by the group
//   key: each SELECT item with its aggregate calls replaced by the hidden
//   columns, HAVING rewritten the same way as its WHERE.
// The rewrite works on token spans (the grammar's aggregate uses, and the
// lexer's tokens between them), never on raw text, so a string literal or a
// quoted name that looks like a call is left alone.
//
// Pure functions: the define half is aggregate_stages_define.h.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/ast.h"
#include "trellis/status.h"

namespace trellis::plan {

// The prefix of a hidden grouping's name; the rest is a number no transform
// has had.
inline constexpr std::string_view kHiddenGroupPrefix = "__trellis_group_";

// The alias the user's projection reads the hidden grouping's target by.
inline constexpr std::string_view kHiddenGroupAlias = "__trellis_grp";

// The hidden column of the `k`-th (from 1) distinct aggregate call.
std::string AggregateColumnName(std::size_t k);

// True for a name AggregateColumnName gives.
bool IsAggregateColumnName(std::string_view name);

// The two statements a statement with CompilesToStages() becomes.
struct AggregateStages {
  grammar::TransformStmt group;  // the hidden grouping, targeting `hidden`
  grammar::TransformStmt owner;  // the user's projection over the hidden target
};

// Compiles `stmt` (REQUIRES: stmt.CompilesToStages()) over the hidden
// grouping `hidden`. Refuses (validation, naming the transform) what the
// rewrite cannot carry: outside its aggregate calls an expression may use
// the GROUP BY expressions only; a column it names that is no GROUP BY
// expression as written, but is the name of one of the target's group
// columns, would read that column instead, so it is refused.
Result<AggregateStages> CompileAggregateStages(const grammar::TransformStmt& stmt,
                                               const grammar::QualifiedName& hidden);

}  // namespace trellis::plan
