// Defines a statement with a query in FROM or WITH queries
// (plan/derived_stages.h): a hidden transform per query, each compiled as
// any statement is, then the user's statement over their targets, recorded
// as one transform with the statement as written.
#pragma once

#include <string>

#include "grammar/ast.h"
#include "pg/connection.h"
#include "plan/define_statement.h"
#include "trellis/status.h"

namespace trellis::plan {

// Defines `stmt` (REQUIRES: stmt.HasDerived()) inside the caller's
// transaction. A refusal of a hidden query names the query it comes from.
Status DefineDerivedStages(pg::Connection& conn, const std::string& schema,
                           const grammar::TransformStmt& stmt, const DefineSteps& steps);

}  // namespace trellis::plan
