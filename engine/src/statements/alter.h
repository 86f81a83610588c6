// ALTER TRANSFORM ... ADD COLUMN / DROP COLUMN / ALTER COLUMN: change the
// target table and rebuild only the column that changed.
#pragma once

#include <string>

#include "catalog/model.h"
#include "grammar/ast.h"
#include "pg/connection.h"
#include "trellis/status.h"
#include "trellis/types.h"

namespace trellis::statements {

// ADD COLUMN of a projection or join transform `t` (one row per source
// row): the target column, its catalog row and stored definition, and a
// rebuild of the column. REQUIRES: inside the caller's transaction, `t`
// locked; changes nothing the caller's rollback does not undo.
Status AddRowColumn(pg::Connection& conn, const std::string& schema, const catalog::Transform& t,
                    const grammar::SelectItem& column);

Result<ApplyResult> AlterAddColumn(pg::Connection& conn, const std::string& schema,
                                   const grammar::AlterAddColumnStmt& stmt);
Result<ApplyResult> AlterDropColumn(pg::Connection& conn, const std::string& schema,
                                    const grammar::AlterDropColumnStmt& stmt);
Result<ApplyResult> AlterColumn(pg::Connection& conn, const std::string& schema,
                                const grammar::AlterColumnStmt& stmt);

}  // namespace trellis::statements
