// The serial steps of a build (a first build, a rebuild or a column
// rebuild), one transaction each: start it (estimate its size and plan it as
// key ranges, rows of the jobs table that any drain worker runs, see
// build_job.h), and end it once every range is in (a first build makes the
// target's key; every build moves the transform to catching_up).
#pragma once

#include <string>

#include "drain/unit_executor.h"
#include "pg/connection.h"
#include "trellis/status.h"

namespace trellis::drain {

// Whether any transform is building (waiting to start, or started): every
// idle poll of every drain worker asks, and almost always none is, so it is
// one statement, not the transactions of the build steps.
Result<bool> AnyBuild(pg::Connection& conn, const std::string& schema);

// Starts or ends one build. Returns true when it did, false when no
// transform's build is at either step. A transform whose key step failed
// waits out its backoff (charging.h) and holds up no other build.
// `range_rows` is the rows a range is planned to hold.
Result<bool> AdvanceBuild(pg::Connection& conn, const std::string& schema, long range_rows,
                          UnitExecutor& executor);

}  // namespace trellis::drain
