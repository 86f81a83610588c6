// Define's work on the tables a definition reads (its inputs: the FROM
// table, then each joined table in statement order): resolving them,
// locking them before any catalog lock, and registering their capture with
// the columns the plan routes. One path for every kind; a projection or a
// GROUP BY simply has one input.
#pragma once

#include <string>
#include <vector>

#include "capture/sources.h"
#include "catalog/model.h"
#include "grammar/ast.h"
#include "pg/connection.h"
#include "plan/transform_plan.h"
#include "trellis/status.h"

namespace trellis::statements {

// Resolves one input by name: refuses a partition or an inheritance child
// (writes through its parent would not reach the target), and keys another
// transform's target that has no key yet by the key its first build will
// give it. `role` says what the table is in the statement, for errors
// ("source table", "joined table").
Result<capture::ResolvedTable> ResolveInput(pg::Connection& conn, const std::string& schema,
                                            const grammar::QualifiedName& name,
                                            const std::string& role);

// Every table `stmt` reads, resolved as ResolveInput does: the FROM table,
// then each joined table in order.
Result<std::vector<capture::ResolvedTable>> ResolveInputs(pg::Connection& conn,
                                                          const std::string& schema,
                                                          const grammar::TransformStmt& stmt);

// Takes SHARE ROW EXCLUSIVE on each table (capture may be installed on it
// or regenerated to route a join column). Define calls it before any lock on
// the catalog (spec/engine.md "Locks").
Status LockTables(pg::Connection& conn, const std::vector<capture::ResolvedTable>& tables);

// Registers every input of `t` (`tables` in t.inputs order) as a source with
// its capture installed, routes the columns `plan` reads from each input's
// capture rows, and records the source ids and routed columns in t.inputs.
Status CaptureInputs(pg::Connection& conn, const std::string& schema, const plan::DefinePlan& plan,
                     const std::vector<capture::ResolvedTable>& tables, catalog::Transform& t);

}  // namespace trellis::statements
