// Watermarks and convergence (spec/engine.md "Convergence"). A watermark
// token is the capture feed's watermark (capture/feed.h; the trigger feed's
// is a snapshot of committed transaction ids, and a write is "before" it
// when pg_visible_in_snapshot says its transaction was committed in it) and
// the highest transform id committed then.
#pragma once

#include <atomic>
#include <chrono>
#include <string>

#include "pg/connection.h"
#include "trellis/status.h"

namespace trellis::reads {

Result<std::string> WatermarkToken(pg::Connection& conn, const std::string& schema);

// True once every write committed before `token` has reached the targets of
// every transform that is not paused; false when `timeout` passed first.
// Returns early with a timeout error when `cancelled` becomes true.
Result<bool> AwaitConverged(pg::Connection& conn, const std::string& schema,
                            const std::string& token, std::chrono::milliseconds timeout,
                            const std::atomic<bool>& cancelled);

}  // namespace trellis::reads
