// ALTER TRANSFORM ... ADD COLUMN / DROP COLUMN / ALTER COLUMN: change the
// target table and rebuild only the column that changed. Kind-agnostic: the
// transform's plan does each change (plan::AlterPlan); this file takes the
// locks, in their order, and the transaction.
#pragma once

#include <string>

#include "grammar/ast.h"
#include "pg/connection.h"
#include "trellis/status.h"
#include "trellis/types.h"

namespace trellis::statements {

Result<ApplyResult> AlterAddColumn(pg::Connection& conn, const std::string& schema,
                                   const grammar::AlterAddColumnStmt& stmt);
Result<ApplyResult> AlterDropColumn(pg::Connection& conn, const std::string& schema,
                                    const grammar::AlterDropColumnStmt& stmt);
Result<ApplyResult> AlterColumn(pg::Connection& conn, const std::string& schema,
                                const grammar::AlterColumnStmt& stmt);

}  // namespace trellis::statements
