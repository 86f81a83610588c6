// ALTER TRANSFORM for GROUP BY transforms (issue 11): a column of a group
// target is an aggregate with hidden state columns beside it, so adding,
// dropping or changing one adds, drops or replaces those too. The group
// keys are fixed: a new key regroups every row, which is a new transform.
// alter.cc locks the transform and hands group transforms here; each
// function runs inside that transaction and changes nothing on error. Over
// a join, ADD and ALTER COLUMN first make the hidden join carry what the new
// aggregate reads (alter_group_join.h); DROP COLUMN leaves the join's
// columns as they are (another aggregate may read them, and the group's
// capture may route them).
#pragma once

#include "catalog/model.h"
#include "grammar/ast.h"
#include "pg/connection.h"
#include "trellis/status.h"

namespace trellis::statements {

// Run by ALTER ADD COLUMN and ALTER COLUMN before any catalog lock: when
// `name` is a group transform that takes deltas, the lock routing a new
// column needs (SHARE ROW EXCLUSIVE on the source, which waits for writers
// in flight and holds new ones until the ALTER commits, as define's does),
// then the staging fence (catalog/locks.h), so that every capture row and
// delta row staged without the new column is from a writer the ALTER's
// rebuild sees. Taken whether or not the column needs routing: which
// columns it reads is known only once the statement is checked, under the
// catalog lock. Then ACCESS EXCLUSIVE on the target, which the ALTER
// changes: waited for under the catalog lock, it deadlocked with a drain
// holding the target and waiting for the transform's catalog row (seen in
// group_by/differential_test.exs). Nothing for any other transform.
// REQUIRES: inside a transaction.
Status LockSourceForRouting(pg::Connection& conn, const std::string& schema,
                            const std::string& name);

// ADD COLUMN <aggregate> AS name: the column and its state, filled by a
// rebuild.
Status AlterGroupAddColumn(pg::Connection& conn, const std::string& schema,
                           const catalog::Transform& t, const grammar::SelectItem& column);

// DROP COLUMN name: the aggregate and its hidden state columns.
Status AlterGroupDropColumn(pg::Connection& conn, const std::string& schema,
                            const catalog::Transform& t, const std::string& column);

// ALTER COLUMN name AS <aggregate>: the new aggregate in the same place,
// its state replaced, refilled by a rebuild.
Status AlterGroupColumn(pg::Connection& conn, const std::string& schema,
                        const catalog::Transform& t, const grammar::SelectItem& column);

}  // namespace trellis::statements
