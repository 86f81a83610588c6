// Define of a statement with DISTINCT aggregates (distinct_aggregate_stages.h;
// spec/engine.md "Compiled stages: DISTINCT aggregates"): in define's one
// transaction, the hidden grouping by the groups and the distinct argument
// (over a join, a grouped join: its hidden join, then it), then the user's
// statement over its target, compiled as a statement with expressions over
// aggregates is (a hidden grouping and the user's projection over it,
// aggregate_stages_define.h). The user's transform's stored definition is
// the statement as written; every hidden part is recorded as one of its
// stages, in order. A refusal of any part creates nothing and reads in the
// user's terms. Define reaches it through DefineStatement.
#pragma once

#include <string>

#include "grammar/ast.h"
#include "pg/connection.h"
#include "plan/define_statement.h"
#include "trellis/status.h"

namespace trellis::plan {

// Defines `stmt` (REQUIRES: stmt.HasDistinctAggregates(), no subqueries)
// inside the caller's transaction, which define has begun and commits, each
// part through `steps`.
Status DefineDistinctAggregateStages(pg::Connection& conn, const std::string& schema,
                                     const grammar::TransformStmt& stmt, const DefineSteps& steps);

}  // namespace trellis::plan
