// One drain transaction: claim a ledger page, recompute its keys from the
// current source state, write the target, delete the page, commit.
#pragma once

#include <set>
#include <string>

#include "pg/connection.h"
#include "trellis/status.h"

namespace trellis::drain {

enum class PageOutcome {
  kNone,     // no claimable page
  kDrained,  // a page was applied and deleted
  kBusy,     // the page's transform is in a backfill chunk; try another
  kFailed,   // the page failed; it was marked for a retry with backoff
};

struct PageResult {
  PageOutcome outcome = PageOutcome::kNone;
  int transform_id = 0;
  long keys = 0;
};

// Drains one page, skipping pages of the transforms in `skip`.
Result<PageResult> DrainOnePage(pg::Connection& conn, const std::string& schema,
                                const std::set<int>& skip);

}  // namespace trellis::drain
