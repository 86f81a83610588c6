// Claiming ledger pages, and applying one claim: the two halves of a drain
// transaction that every drain of pages shares (drain/drain_page.h, the
// transaction; drain/follow_through.h, the stages after it).
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "catalog/model.h"
#include "drain/unit_executor.h"
#include "pg/connection.h"
#include "trellis/status.h"

namespace trellis::drain {

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

// The pages of one transform one claim statement locked.
struct PageClaim {
  int transform_id = 0;
  std::string page_ids;  // a bigint[] literal
  long pages = 0;
  long keys = 0;
  long delta_rows = 0;    // as the pages record them (none for pages staged before catalog step 16)
  bool retrying = false;  // a page of it failed before
  bool whole = false;     // one of them is a whole page (staging/whole_pages.h)
  // The transform's lock was taken shared and every bucket's lock: false
  // when a rebuild's range holds the transform or another drain a bucket,
  // and the caller leaves the pages (rolls back).
  bool free = false;
  // Another transform reads the target (a stage its owner reads, a chain's
  // next link), as the claim's own snapshot of the catalog says.
  bool read_by_others = false;
};

// Which pages a claim may take: the oldest claimable page of any transform
// not in `skip` (a drain's first claim), or, with `readers_of` given, only
// pages of transforms that read the target of one of those transform ids
// and are not upstream of any of them (drain/follow_through.h).
struct ClaimScope {
  std::set<int> skip;
  std::optional<std::vector<int>> readers_of;
};

// The claim statement and its parameters, for a caller that sends it with
// its BEGIN (pg::Transaction::BeginWith), and the claim it returned
// (nullopt: no claimable page).
std::string ClaimSql(const std::string& schema, const ClaimScope& scope);
pg::Params ClaimParams(const std::string& schema, const ClaimScope& scope);
Result<std::optional<PageClaim>> ReadClaim(const pg::Rows& rows);

// What applying a claim came to.
enum class ClaimOutcome {
  kApplied,    // the pages were applied and deleted
  kBusy,       // a rebuild was chosen and another drain holds the transform
  kFailed,     // charged or paused: the pages were marked for a retry
  kPauseAlone  // a schema change: the caller rolls back, then pauses alone
};

struct AppliedClaim {
  ClaimOutcome outcome = ClaimOutcome::kApplied;
  catalog::Transform transform;
  Status error;  // kPauseAlone: the schema change met
};

// Loads the claimed transform, chooses the batch's path, runs its unit
// through `executor` and records the batch, in the caller's transaction.
// REQUIRES: `claim.free`.
Result<AppliedClaim> ApplyClaim(pg::Connection& conn, const std::string& schema,
                                const PageClaim& claim, UnitExecutor& executor);

}  // namespace trellis::drain
