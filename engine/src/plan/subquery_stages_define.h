// Define of a statement with subqueries in WHERE (subquery_stages.h;
// spec/engine.md "Compiled stages: subqueries in WHERE"): in define's one
// transaction, each subquery's hidden grouping, then the user's statement
// over their targets (itself defined as any statement is: a join, or a
// grouped join or compiled aggregate stages over one), whose stored
// definition is the statement as the user wrote it; every hidden part is
// recorded as a stage of the user's transform, in order. A refusal of any
// part creates nothing and names the subquery by its position. Define
// reaches it through DefineStatement.
#pragma once

#include <string>

#include "grammar/ast.h"
#include "pg/connection.h"
#include "plan/define_statement.h"
#include "trellis/status.h"

namespace trellis::plan {

// Defines `stmt` (REQUIRES: stmt.HasSubqueries()) inside the caller's
// transaction, which define has begun and commits, each part through `steps`.
Status DefineSubqueryStages(pg::Connection& conn, const std::string& schema,
                            const grammar::TransformStmt& stmt, const DefineSteps& steps);

}  // namespace trellis::plan
