// PAUSE, RESUME and DROP TRANSFORM.
#pragma once

#include <string>

#include "grammar/ast.h"
#include "pg/connection.h"
#include "trellis/status.h"
#include "trellis/types.h"

namespace trellis::statements {

Result<ApplyResult> Pause(pg::Connection& conn, const std::string& schema,
                          const grammar::PauseStmt& stmt);
Result<ApplyResult> Resume(pg::Connection& conn, const std::string& schema,
                           const grammar::ResumeStmt& stmt);
Result<ApplyResult> Drop(pg::Connection& conn, const std::string& schema,
                         const grammar::DropStmt& stmt);

}  // namespace trellis::statements
