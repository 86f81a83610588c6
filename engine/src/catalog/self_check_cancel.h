// The cancel of a target's unfinished self-check, the one write of the
// self_check_jobs table made outside drain/self_check_jobs.h: PAUSE
// TRANSFORM (statements/lifecycle) makes it in its own transaction, and
// statements/ may not include drain/ (engine/layers.txt).
//
// REQUIRES: inside a transaction.
#pragma once

#include <string>

#include "pg/connection.h"
#include "trellis/status.h"

namespace trellis::catalog {

// Sets transform `transform_id`'s self-check job, when it is queued or
// running, to cancelled with `reason` as its error. A running job's worker
// notices at its next write, which checks the state, and drops the job.
[[nodiscard]] Status CancelSelfCheck(pg::Connection& conn, const std::string& schema,
                                     int transform_id, const std::string& reason);

}  // namespace trellis::catalog
