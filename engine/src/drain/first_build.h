// The first build of a target, in parallel: planned as key ranges of the
// source, each appended by whichever drain worker claims it, in its own
// transaction. The key is made once every range is in (backfill_chunk.cc).
#pragma once

#include <string>

#include "catalog/model.h"
#include "drain/unit_executor.h"
#include "pg/connection.h"
#include "trellis/status.h"

namespace trellis::drain {

// Cuts the source into ranges of about `range_rows` rows (from a sample of
// its pages) and records them. Runs in the caller's transaction, which holds
// the transform's row; `estimated_rows` is the source's size as far as known.
Status PlanFirstBuild(pg::Connection& conn, const std::string& schema, const catalog::Transform& t,
                      long estimated_rows, long range_rows);

// Claims one planned range of a first build (a build_range row of the jobs
// table), appends its rows to the target through `executor` and deletes the
// range, in one transaction. Returns the rows appended, or nullopt when no
// range was free to claim.
Result<std::optional<long>> AppendOneRange(pg::Connection& conn, const std::string& schema,
                                           UnitExecutor& executor);

}  // namespace trellis::drain
