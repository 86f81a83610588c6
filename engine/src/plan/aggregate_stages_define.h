// Define of a statement compiled into stages (aggregate_stages.h; spec/
// engine.md "Compiled stages"): in define's one transaction, the hidden
// grouping (over a join, a grouped join: its hidden join, then it), then the
// user's projection over its target, whose stored definition is the
// statement as the user wrote it; the hidden parts are recorded as the
// user's transform's stages, in order. A refusal of any part creates nothing
// and reads in the user's terms. Define reaches it through DefineStatement.
#pragma once

#include <string>
#include <vector>

#include "grammar/ast.h"
#include "pg/connection.h"
#include "plan/define_statement.h"
#include "trellis/status.h"

namespace trellis::plan {

// Defines `stmt` (REQUIRES: stmt.CompilesToStages()) inside the caller's
// transaction, which define has begun and commits, each part through `steps`.
Status DefineAggregateStages(pg::Connection& conn, const std::string& schema,
                             const grammar::TransformStmt& stmt, const DefineSteps& steps);

// The FROM and joins of `stmt` over the tables `inputs` resolved (the FROM
// table first, then each joined table in order), as SQL: for the check of
// the statement as written.
std::string StatementFromSql(const grammar::TransformStmt& stmt,
                             const std::vector<capture::ResolvedTable>& inputs);

// Defines hidden grouping `group` (without subqueries; over a join, a
// grouped join: its hidden join, then it); returns the ids of its parts,
// the hidden join first, the grouping last.
Result<std::vector<int>> DefineHiddenGrouping(pg::Connection& conn, const std::string& schema,
                                              const grammar::TransformStmt& group,
                                              const DefineSteps& steps);

// Refuses an ALTER TRANSFORM of transform `name` whose stored definition
// `definition` is compiled into stages (unsupported, naming the fix: DROP
// and define again). OK for any other.
Status RefuseAlterOfStages(const std::string& name, const std::string& definition);

}  // namespace trellis::plan
