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
