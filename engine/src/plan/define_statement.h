// Which catalog transforms a TRANSFORM statement defines, and in what
// order: one, or for a GROUP BY over a join its hidden join and the
// grouping over it (group_define_over_join.h), or for a HAVING or an
// expression over aggregates its hidden grouping and the projection over it
// (aggregate_stages_define.h), or for a DISTINCT aggregate a grouping by its
// values under those (distinct_aggregate_stages_define.h). Define (statements/define.h)
// runs the steps of each transform and lends them here as DefineSteps, so
// that it asks no question of the statement's kind itself.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "capture/sources.h"
#include "grammar/ast.h"
#include "pg/connection.h"
#include "trellis/status.h"

namespace trellis::plan {

// What define lends: each inside the caller's transaction.
struct DefineSteps {
  // Resolves one input by name (`role` says what it is in the statement, for
  // errors: "source table", "joined table").
  std::function<Result<capture::ResolvedTable>(const grammar::QualifiedName& name,
                                               const std::string& role)>
      resolve_input;
  // Resolves every table a statement reads: the FROM table, then each
  // joined table in order.
  std::function<Result<std::vector<capture::ResolvedTable>>(const grammar::TransformStmt&)>
      resolve_inputs;
  // Defines one catalog transform of `stmt` over its resolved `inputs`
  // (locks, checks, target, capture, catalog rows); returns its id.
  std::function<Result<int>(const grammar::TransformStmt& stmt,
                            const std::vector<capture::ResolvedTable>& inputs)>
      define_one;
};

// Refuses a target a hidden part could be mistaken for: one in the catalog
// schema `schema`, or a name starting with __trellis_ (Trellis's own names).
Status RefuseReservedTarget(const std::string& schema, const grammar::QualifiedName& target);

// Defines `stmt` inside the caller's transaction, which define has begun
// and commits. A refusal of any part creates nothing (the caller rolls back).
Status DefineStatement(pg::Connection& conn, const std::string& schema,
                       const grammar::TransformStmt& stmt, const DefineSteps& steps);

// DefineStatement without the check of the target's name: for a hidden
// part compiled as a statement of its own (plan/derived_stages_define.h).
Status DefineCompiled(pg::Connection& conn, const std::string& schema,
                      const grammar::TransformStmt& stmt, const DefineSteps& steps);

}  // namespace trellis::plan
