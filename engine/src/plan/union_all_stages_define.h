// Defines a UNION ALL statement (plan/union_all_stages.h): a hidden
// projection or join per branch, the FULL JOINs stacking them, the last the
// user's transform, recorded as one transform with the statement as written.
#pragma once

#include <string>

#include "grammar/ast.h"
#include "pg/connection.h"
#include "plan/define_statement.h"
#include "trellis/status.h"

namespace trellis::plan {

// Defines `stmt` (REQUIRES: stmt.HasUnionAll()) inside the caller's
// transaction. Refuses, naming the column or table and the fix, a column
// whose type differs between branches and an input without a key.
Status DefineUnionAllStages(pg::Connection& conn, const std::string& schema,
                            const grammar::TransformStmt& stmt, const DefineSteps& steps);

}  // namespace trellis::plan
