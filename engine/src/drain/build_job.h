// The ranges of a build, run by any number of drain workers at once: each
// claims one job of the jobs table (catalog/jobs.h), writes its key range
// through the unit executor and deletes the job, in one transaction. A
// first build's range is appended to a target without a key; a rebuild's
// is recomputed in place, exclusive with drains of the same transform
// (their recomputes must not interleave with the range's snapshot).
#pragma once

#include <optional>
#include <string>

#include "drain/unit_executor.h"
#include "pg/connection.h"
#include "trellis/status.h"

namespace trellis::drain {

// Returns the rows written, or nullopt when no range was free to claim. A
// worker asks AnyBuild() (build_step.h) first: almost always no build runs.
Result<std::optional<long>> RunOneBuildJob(pg::Connection& conn, const std::string& schema,
                                           UnitExecutor& executor);

}  // namespace trellis::drain
