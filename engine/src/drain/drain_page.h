// One drain transaction: claim ledger pages of one transform, recompute
// their keys from the current source state, write the target, delete the
// pages, commit.
#pragma once

#include <set>
#include <string>

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
};

// Pages claimed together: at most this many, and at most this many keys
// (or the one oldest page, when it alone holds more).
inline constexpr int kMaxPagesPerClaim = 32;
inline constexpr int kKeysPerClaim = 2000;
// A transform's claimable backlog above this many keys (a page's worth: the
// staging worker cuts pages of about 1000 keys) is split: a claim takes
// about half of it and leaves the rest to another drain.
inline constexpr int kSplitClaimAboveKeys = 1000;

// Drains the oldest claimable pages of one transform, skipping pages of the
// transforms in `skip`, through `executor`.
Result<PageResult> DrainPages(pg::Connection& conn, const std::string& schema,
                              const std::set<int>& skip, UnitExecutor& executor);

}  // namespace trellis::drain
