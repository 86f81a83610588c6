// The first lock of every ALTER TRANSFORM: the drain lock of each transform
// it changes, exclusively (spec/engine.md "Lock order"). A drain takes that
// lock shared before it loads the transform's columns, and a rebuild's
// range exclusively, so a drain or range either commits before the ALTER
// changes anything or starts after it committed and loads the columns as
// the ALTER left them. Without it a drain that had loaded a column before a
// DROP COLUMN committed recomputed it after (42703, which pauses the
// transform), and an ALTER waiting for a target a drain had written, while
// holding the catalog row that drain was about to update, deadlocked.
#pragma once

#include <string>
#include <vector>

#include "pg/connection.h"
#include "trellis/status.h"

namespace trellis::statements {

// Takes, exclusively and in ascending id order, the drain lock of the
// transform named `name` and, when it groups a join, of its hidden join
// part (an ALTER of the group may add columns to the join). Waits for drains
// and ranges of them running now; takes no row or table lock, so it waits
// with nothing of the catalog held. Returns the ids locked, in order (none
// when no transform has the name: the ALTER's own load reports that).
// REQUIRES: inside a transaction, before any other lock of the ALTER.
Result<std::vector<int>> LockAlteredTransforms(pg::Connection& conn, const std::string& schema,
                                               const std::string& name);

// The ids LockAlteredTransforms would lock now, without locking: the ALTER
// compares them with the ones it locked once it holds the transform's row
// (a DROP and a new DEFINE of the name in between change them).
Result<std::vector<int>> AlteredTransformIds(pg::Connection& conn, const std::string& schema,
                                             const std::string& name);

}  // namespace trellis::statements
