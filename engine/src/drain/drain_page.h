// One drain transaction: claim ledger pages of one transform, recompute
// their keys from the current source state, write the target, delete the
// pages, commit.
#pragma once

#include <functional>
#include <set>
#include <string>

#include "catalog/model.h"
#include "drain/unit_executor.h"
#include "pg/connection.h"
#include "trellis/status.h"

namespace trellis::drain {

enum class PageOutcome {
  kNone,     // no claimable page
  kDrained,  // pages were applied and deleted
  kBusy,     // a rebuild's range holds the transform, or another drain one of
             // the pages' key buckets; try another
  kFailed,   // the pages failed; they were marked for a retry with backoff
};

struct PageResult {
  PageOutcome outcome = PageOutcome::kNone;
  int transform_id = 0;
  long pages = 0;
  long keys = 0;
  long delta_rows = 0;  // as the pages record them (none for pages staged before catalog step 16)
  // Another transform reads the target (a stage its owner reads, a chain's
  // next link), as the claim's own snapshot of the catalog says: a drain of
  // it made work for staging.
  bool read_by_others = false;
  // Capture rows of the drain's own writes staged in its transaction
  // (StageOwnWritesFn).
  long staged_own_writes = 0;
};

// Pages claimed together: at most this many, at most this many keys, and at
// most this many delta rows (or the one oldest page, when it alone holds
// more: a page is never split, and the oldest always goes). Keys bound a
// recompute; a delta statement's work is its delta rows, which a GROUP BY
// with few groups gets without bound under few keys (bench/README.md "Fleet
// soak", finding 3: a claim of a backlog of 202,253 delta rows of 3 groups
// ran one statement for minutes under a bucket lock). 10,000 is ten staging
// batches of single-row updates (each at most 1,000 delta rows), so a
// steady stream of small pages still goes out in few transactions.
inline constexpr int kMaxPagesPerClaim = 32;
inline constexpr int kKeysPerClaim = 2000;
inline constexpr int kDeltaRowsPerClaim = 10000;
// A transform's claimable backlog above this many keys (a page's worth: the
// staging worker cuts pages of about 1000 keys) is split: a claim takes
// about half of it and leaves the rest to another drain.
inline constexpr int kSplitClaimAboveKeys = 1000;

// Stages, in the drain's transaction, the capture rows its writes to
// `drained`'s target made, and returns how many it consumed (0: left to
// the staging worker). The staging layer's StageOwnWrites, passed down by
// whoever makes the drain workers (drain/ may not call staging/).
using StageOwnWritesFn = std::function<Result<long>(pg::Connection&, const std::string& schema,
                                                    const catalog::Transform& drained)>;

// Drains the oldest claimable pages of one transform, skipping pages of the
// transforms in `skip`, through `executor`. When another transform reads
// the target drained (`read_by_others`, asked by the claim itself), its
// capture rows are staged in the same transaction by `stage_own_writes`
// when given (the readers' pages commit with the writes, and this process's
// drains are woken at once); what that leaves, the commit notifies the
// staging worker of every port of (workers/wake_channel.h).
Result<PageResult> DrainPages(pg::Connection& conn, const std::string& schema,
                              const std::set<int>& skip, UnitExecutor& executor,
                              const StageOwnWritesFn& stage_own_writes = {});

}  // namespace trellis::drain
