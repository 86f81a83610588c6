// The self_check_jobs table: the one place that reads and writes it, but
// for the cancel PAUSE TRANSFORM makes (catalog/self_check_cancel.h).
// A target has at most one job. Starting a check while the target's job is
// queued or running returns that job; otherwise the finished job is replaced
// by a new one with a new id, so the old id reads as gone. A drain worker
// claims a queued job, or a running one whose worker stopped heartbeating
// (its port was killed): the claim is the lease, the worker's heartbeat in
// the workers table keeps it, and every write of a running job checks that
// the writer still holds it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "pg/connection.h"
#include "trellis/self_check.h"
#include "trellis/status.h"

namespace trellis::drain {

// A worker that has not heartbeated for this long has lost its jobs.
inline constexpr int kSelfCheckLeaseSeconds = 10;

// Starts a job for transform `transform_id` (named `target` in the answer),
// or returns its unfinished one. REQUIRES: `request` validated.
Result<SelfCheckJob> StartSelfCheckJob(pg::Connection& conn, const std::string& schema,
                                       int transform_id, const std::string& target,
                                       const SelfCheckRequest& request);

// The job `id` with its report; unset when there is no such job.
Result<std::optional<SelfCheckJob>> ReadSelfCheckJob(pg::Connection& conn,
                                                     const std::string& schema, int64_t id);

struct ClaimedSelfCheck {
  int64_t id = 0;
  int transform_id = 0;
  std::string mode;
  int64_t sample_size = 0;
};

// Claims the oldest queued job, or a running one whose worker is gone, for
// `worker_id`; its progress restarts from zero.
Result<std::optional<ClaimedSelfCheck>> ClaimSelfCheckJob(pg::Connection& conn,
                                                          const std::string& schema,
                                                          const std::string& worker_id);

// Adds `rows` to the job's rows_compared. False when `worker_id` no longer
// holds the job (taken over, replaced, or its transform dropped).
Result<bool> AddSelfCheckProgress(pg::Connection& conn, const std::string& schema, int64_t id,
                                  const std::string& worker_id, int64_t rows);

// Ends the job: done with `report`, or failed with `error`.
Status FinishSelfCheckJob(pg::Connection& conn, const std::string& schema, int64_t id,
                          const std::string& worker_id, const SelfCheckReport& report);
Status FailSelfCheckJob(pg::Connection& conn, const std::string& schema, int64_t id,
                        const std::string& worker_id, const std::string& error);

}  // namespace trellis::drain
