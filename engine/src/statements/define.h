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

#include <vector>

#include "capture/sources.h"

namespace trellis::statements {

// Define's work inside a transaction the caller holds: binds `stmt` to its
// resolved `inputs` (the FROM table, then the joined ones), locks them
// before any catalog lock, checks, creates the target, installs capture,
// stores the catalog rows with `stmt` rendered as the definition, and
// builds an empty source at once. Returns the transform's id. Define lends
// it to the plan room (plan::DefineSteps::define_one), which calls it once
// per catalog transform of the statement (a grouped join's two parts).
Result<int> DefineOver(pg::Connection& conn, const std::string& schema,
                       const grammar::TransformStmt& stmt,
                       const std::vector<capture::ResolvedTable>& inputs);

}  // namespace trellis::statements
