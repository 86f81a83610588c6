#include "drain/drain_page.h"

#include "drain/follow_through.h"
#include "drain/page_claim.h"
#include "workers/wake_channel.h"
#include "workers/worker_loop.h"

namespace trellis::drain {

Result<PageResult> DrainPages(pg::Connection& conn, const std::string& schema,
                              const std::set<int>& skip, UnitExecutor& executor,
                              const StageOwnWritesFn& stage_own_writes) {
  const ClaimScope scope{skip, std::nullopt};
  pg::Rows rows;
  auto tx =
      pg::Transaction::BeginWith(conn, ClaimSql(schema, scope), ClaimParams(schema, scope), &rows);
  if (!tx.ok()) return tx.status();
  auto read = ReadClaim(rows);
  if (!read.ok()) return read.status();
  if (!read->has_value()) {
    TRELLIS_RETURN_IF_ERROR(tx.value()->Commit());
    return PageResult{};
  }
  const PageClaim& claim = **read;
  const int tid = claim.transform_id;
  PageResult result{PageOutcome::kDrained, tid, claim.pages, claim.keys, claim.delta_rows};
  result.read_by_others = claim.read_by_others;
  // A rebuild's range holds the transform, or another drain one of the
  // pages' buckets: the pages wait (rolled back).
  if (!claim.free) return PageResult{PageOutcome::kBusy, tid, 0, 0};

  auto applied = ApplyClaim(conn, schema, claim, executor);
  if (!applied.ok()) return applied.status();
  switch (applied->outcome) {
    case ClaimOutcome::kApplied:
      break;
    case ClaimOutcome::kBusy:
      return PageResult{PageOutcome::kBusy, tid, 0, 0};
    case ClaimOutcome::kFailed:
      result.outcome = PageOutcome::kFailed;
      break;
    case ClaimOutcome::kPauseAlone:
      tx.value().reset();
      TRELLIS_RETURN_IF_ERROR(
          executor.PauseAlone(conn, schema, applied->transform, applied->error));
      result.outcome = PageOutcome::kFailed;
      return result;
  }
  // Its target is another transform's input: its readers' pages are made
  // here, and followed (drain/follow_through.h), or else the capture rows
  // this commit makes wake the staging worker, wherever it runs (at commit
  // only).
  long staged_here = 0;
  Followed followed;
  if (result.outcome == PageOutcome::kDrained && result.read_by_others) {
    if (stage_own_writes) {
      auto staged = stage_own_writes(conn, schema, applied->transform);
      if (!staged.ok()) return staged.status();
      staged_here = staged.value();
    }
    if (staged_here == 0) {
      TRELLIS_RETURN_IF_ERROR(conn.Exec(
          workers::kNotifySql, {workers::WakeChannel(schema, "staging"), workers::WakeSender()}));
    } else {
      auto follow = FollowThrough(conn, schema, tid, executor, stage_own_writes);
      if (!follow.ok()) return follow.status();
      followed = follow.value();
    }
  }
  TRELLIS_RETURN_IF_ERROR(tx.value()->Commit());
  // The readers' pages not followed are committed: this process's drains
  // start on them now (other ports heard the staging statement's notify
  // at the commit).
  if (staged_here > 0 && followed.pages_left) workers::WorkerLoop::NudgeRole("drain");
  result.staged_own_writes = staged_here + followed.staged_own_writes;
  result.followed_claims = followed.claims;
  result.followed_pages = followed.pages;
  result.followed_keys = followed.keys;
  result.followed_staging_left = followed.staging_left;
  return result;
}

}  // namespace trellis::drain
