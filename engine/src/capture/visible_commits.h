// Which of a slot read's transactions the server shows committed yet.
//
// A slot hands a transaction over once its commit record is flushed, but
// the writer leaves the server's running transactions (and so becomes
// visible to new snapshots) only after that: a synchronous standby's wait
// lies in between, and a writer descheduled at the wrong moment makes the
// same gap. A change staged there was drained from a snapshot that did not
// see it yet: the recompute read the row as it was before, the page was
// gone, and the target kept the old row. So the logical feed stages only
// the transactions a snapshot taken after the read sees, and leaves the
// rest for the next read (spec/engine.md "Capture feeds", "Commits the
// slot hands over early").
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trellis/status.h"

namespace trellis::capture {

// A snapshot as `pg_current_snapshot()::text` prints it: `xmin:xmax:xip,...`.
struct XactSnapshot {
  uint64_t xmin = 0;
  uint64_t xmax = 0;
  std::vector<uint64_t> running;  // the xip list

  static std::optional<XactSnapshot> Parse(std::string_view text);

  // Whether a transaction known to have committed is visible in it.
  bool Sees(uint64_t xid) const;
};

// How many of `messages` (one peek's pgoutput rows: whole transactions in
// commit order) come before the first transaction `snapshot` does not see;
// all of them when it sees every one. Transaction ids are widened against
// the snapshot's xmax: every one the read returned was assigned before it.
Result<size_t> VisiblePrefix(const std::vector<std::string>& messages,
                             const XactSnapshot& snapshot);

}  // namespace trellis::capture
