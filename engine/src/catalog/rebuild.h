// Scheduling a (re)build of a target: the backfill restarts from the first
// key and recomputes every row, either whole or for some columns only.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "pg/connection.h"
#include "trellis/status.h"

namespace trellis::catalog {

// Restarts the backfill of transform `id`. `columns` unset rebuilds whole
// rows; set, it rebuilds those columns (merged with any column rebuild still
// pending; a pending whole-row rebuild stays whole). The transform goes to
// waiting_to_backfill unless it is paused, in which case it stays paused and
// the rebuild runs when it resumes.
// REQUIRES: inside a transaction.
Status RequestRebuild(pg::Connection& conn, const std::string& schema, int id,
                      const std::optional<std::vector<std::string>>& columns);

}  // namespace trellis::catalog
