// TRANSFORM: validates a definition against the database and, in one
// transaction, creates its target table, registers it and installs capture.
// On any error nothing is created.
#pragma once

#include <string>

#include "grammar/ast.h"
#include "pg/connection.h"
#include "trellis/status.h"

namespace trellis::statements {

// Returns the target table's name as the user gave it ("widget_prices" or
// "app.widget_prices").
Result<std::string> Define(pg::Connection& conn, const std::string& schema,
                           const grammar::TransformStmt& stmt);

}  // namespace trellis::statements
