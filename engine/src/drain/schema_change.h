// A source or target that no longer matches its transform's definition: a
// column, table, function or type it uses was dropped, renamed or changed
// behind Trellis's back. Retrying cannot help, so the transform is paused
// with kind schema_change and a reason naming the error and the fix, rather
// than retried forever (spec/engine.md "Drain").
#pragma once

#include <string>

#include "catalog/model.h"
#include "pg/connection.h"
#include "trellis/status.h"

namespace trellis::drain {

// Whether `error` says the SQL no longer fits the tables (SQLSTATE 42703,
// 42P01, 42883, 42804, 42846 or 42704).
bool IsSchemaChange(const Status& error);

// Pauses `t` with kind schema_change, quoting `error`. Runs in the caller's
// transaction.
Status PauseForSchemaChange(pg::Connection& conn, const std::string& schema,
                            const catalog::Transform& t, const Status& error);

}  // namespace trellis::drain
