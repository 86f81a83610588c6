// The serial part of a backfill, one transaction per call: start a build
// (a first build is planned as ranges, see first_build.h), finish a first
// build once its ranges are appended (make the key), or recompute a
// rebuild's next key range and advance its cursor. The step that finishes
// moves the transform to catching_up.
#pragma once

#include <string>

#include "drain/unit_executor.h"
#include "pg/connection.h"
#include "trellis/status.h"

namespace trellis::drain {

// Returns true when a chunk was done, false when no transform needs one. A
// transform whose last chunk failed waits out its backoff (charging.h) and
// holds up no other transform's build meanwhile.
Result<bool> BackfillOneChunk(pg::Connection& conn, const std::string& schema, long chunk_rows,
                              UnitExecutor& executor);

}  // namespace trellis::drain
