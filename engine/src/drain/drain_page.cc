#include "drain/drain_page.h"

#include "catalog/chains.h"
#include "catalog/model.h"
#include "catalog/states.h"
#include "drain/path_chooser.h"
#include "plan/bind.h"
#include "sql/quote.h"
#include "sql/row_reader.h"
#include "workers/locks.h"
#include "workers/wake_channel.h"
#include "workers/worker_loop.h"

namespace trellis::drain {
namespace {

std::string IntArray(const std::set<int>& ids) {
  std::vector<std::string> parts;
  for (int id : ids) parts.push_back(std::to_string(id));
  return "{" + sql::Join(parts, ",") + "}";
}

// Claims the oldest claimable page of a transform that is not paused, and
// with it the next pages of the same transform, up to the limits: one
// recompute then serves them all. When the transform's claimable backlog
// (its pages from the oldest on, read without locks; at most twice a
// claim's pages) holds more keys than a page, the claim takes about half of
// it (pages whose running key count stays within half, and always the
// oldest), so another idle drain takes the rest side by side; a stream of
// small pages stays under that and still goes out in few transactions. The
// pages taken are also capped by the delta rows they carry (the running
// count in id order, as staging recorded it; the oldest page always goes,
// even alone over the cap), so one delta statement never folds an unbounded
// backlog of a few hot groups. A page staged before catalog step 16 has no
// count and counts as the whole cap, so it goes with no other page that
// carries delta rows: its count is unknown and may be the very backlog the
// cap is for. Such pages exist only across the upgrade; the price is one
// drain transaction per old page until they are gone. Only
// the pages taken are locked (SKIP LOCKED: other drains take others); the
// backlog is read unlocked so the pages left are free for them.
//
// The same statement then takes the transform's lock shared, if it can (a
// rebuild's range holds it exclusively: `free` is false and the caller
// leaves these pages for later instead of idling behind it), and, when it
// did, the locks of the pages' key buckets, so two drains of the same keys
// never interleave and an older snapshot can never overwrite a newer one.
// The bucket locks are try-locks too (`buckets_free`): a drain that finds
// one held by another drain (a long statement over a hot bucket) leaves
// these pages for later and drains other transforms, where waiting for it
// held every drain thread of the fleet behind one statement (bench/README.md
// "Fleet soak", finding 3). A whole page (staging/whole_pages.h) has no
// buckets: the rebuild that drains it takes the transform's lock
// exclusively instead (drain/path_chooser.h). The locks it did get go with the rollback. The source
// is read by later statements, whose snapshots come after these locks. One statement, not three:
// each round trip is latency on every write (bench/README.md).
std::string ClaimSql(const std::string& schema) {
  return catalog::StateSql(R"sql(
WITH head AS (
  SELECT p.id, p.transform_id FROM {schema}.pages p JOIN {schema}.transforms t ON t.id = p.transform_id
  WHERE t.status <> {state:paused} AND t.key_indexed
    AND (p.retry_at IS NULL OR p.retry_at <= now())
    AND p.transform_id <> ALL($2::int[])
  ORDER BY p.id LIMIT 1
  FOR UPDATE OF p SKIP LOCKED
), backlog AS (
  SELECT q.id, sum(q.key_count) OVER w AS keys_through,
         sum(coalesce(q.delta_count, $6::int)) OVER w AS deltas_through
  FROM (SELECT p.id, p.key_count, p.delta_count FROM {schema}.pages p, head h
        WHERE p.transform_id = h.transform_id AND p.id >= h.id
          AND (p.retry_at IS NULL OR p.retry_at <= now())
        ORDER BY p.id LIMIT 2 * $3::int) AS q
  WINDOW w AS (ORDER BY q.id)
), share AS (
  SELECT CASE WHEN max(keys_through) > $5::int
              THEN least($4::int, ceil(max(keys_through) / 2.0)) ELSE $4::int END AS keys
  FROM backlog
), claimed AS (
  SELECT p.id, p.transform_id, p.buckets, p.key_count, coalesce(p.delta_count, 0) AS delta_count,
         p.attempts, p.whole FROM {schema}.pages p
  WHERE p.id IN (SELECT b.id FROM backlog b, share s
                 WHERE b.id = (SELECT id FROM head)
                    OR (b.keys_through <= s.keys AND b.deltas_through <= $6::int)
                 ORDER BY b.id LIMIT $3::int)
    AND (p.retry_at IS NULL OR p.retry_at <= now())
  FOR UPDATE OF p SKIP LOCKED
), picked AS (
  SELECT transform_id, array_agg(id ORDER BY id) AS ids, count(*) AS pages,
         sum(key_count) AS keys, sum(delta_count) AS delta_rows,
         ARRAY(SELECT DISTINCT b FROM claimed, unnest(buckets) AS b ORDER BY b) AS buckets,
         max(attempts) AS attempts, bool_or(whole) AS whole
  FROM claimed GROUP BY transform_id
), shared AS MATERIALIZED (
  SELECT picked.*,
         pg_try_advisory_xact_lock_shared()sql" +
                               workers::TransformLockSpace() + R"sql(, transform_id) AS free
  FROM picked
)
SELECT transform_id, ids, pages, keys, attempts, free, delta_rows, whole,
       CASE WHEN free THEN
         (SELECT coalesce(bool_and(pg_try_advisory_xact_lock()sql" +
                               workers::BucketLockSpace() + ", s.transform_id * " +
                               std::to_string(workers::kBuckets) + R"sql( + b)), true)
          FROM (SELECT b FROM unnest(s.buckets) AS b ORDER BY b) AS sorted)
       END AS buckets_free,)sql",
                           schema) +
         // Asked in the claim's snapshot, so a reader defined before this
         // drain began is always seen: its wake is never left to a cached
         // list's next refresh. Appended rendered (a schema's name may hold
         // braces the template would read as slots).
         "\n       " + catalog::ReadByOthersSql(schema, "s.transform_id") +
         " AS read_by_others\nFROM shared s";
}

}  // namespace

Result<PageResult> DrainPages(pg::Connection& conn, const std::string& schema,
                              const std::set<int>& skip, UnitExecutor& executor,
                              const StageOwnWritesFn& stage_own_writes) {
  pg::Rows claim;
  auto tx = pg::Transaction::BeginWith(
      conn, ClaimSql(schema),
      {schema, IntArray(skip), std::to_string(kMaxPagesPerClaim), std::to_string(kKeysPerClaim),
       std::to_string(kSplitClaimAboveKeys), std::to_string(kDeltaRowsPerClaim)},
      &claim);
  if (!tx.ok()) return tx.status();
  if (claim.empty()) {
    TRELLIS_RETURN_IF_ERROR(tx.value()->Commit());
    return PageResult{};
  }
  sql::RowReader claimed(claim, 0);
  const int tid = claimed.Int(0);
  const std::string page_ids = claimed.Text(1);
  PageResult result{PageOutcome::kDrained, tid, claimed.Int64(2), claimed.Int64(3),
                    claimed.Int64(6)};
  const bool whole = claimed.Bool(7);
  result.read_by_others = claimed.Bool(9);
  const bool retrying = claimed.Int64(4) != 0;
  const bool free = claimed.Bool(5) && claimed.OptionalText(8) == std::optional<std::string>("t");
  if (!claimed.status().ok()) return claimed.status();
  // A rebuild's range holds the transform, or another drain one of the
  // pages' buckets: the pages wait (rolled back).
  if (!free) return PageResult{PageOutcome::kBusy, tid, 0, 0};

  auto transform = catalog::LoadTransformById(conn, schema, tid);
  if (!transform.ok()) return transform.status();
  auto plan = plan::Bind(transform.value(), schema);
  if (!plan.ok()) return plan.status();
  // The batch's path: deltas, a recompute of its units, or a rebuild
  // (drain/path_chooser.h).
  auto batch = ChooseBatch(conn, schema, *plan.value(), transform.value(), page_ids, result.keys,
                           result.delta_rows, whole);
  if (!batch.ok()) return batch.status();
  if (batch->busy) return PageResult{PageOutcome::kBusy, tid, 0, 0};
  auto ran =
      executor.Run(conn, schema, transform.value(), *batch->unit, RunOptions{.retrying = retrying});
  if (!ran.ok()) return ran.status();
  switch (ran->outcome) {
    case UnitOutcome::kApplied:
      break;
    case UnitOutcome::kCharged:
    case UnitOutcome::kPaused:
      result.outcome = PageOutcome::kFailed;
      break;
    case UnitOutcome::kPauseAlone:
      tx.value().reset();
      TRELLIS_RETURN_IF_ERROR(executor.PauseAlone(conn, schema, transform.value(), ran->error));
      result.outcome = PageOutcome::kFailed;
      return result;
  }
  TRELLIS_RETURN_IF_ERROR(RecordBatch(conn, schema, *plan.value(), batch.value(), ran.value()));
  // Its target is another transform's input: its readers' pages are made
  // here, or else the capture rows this commit makes wake the staging
  // worker, wherever it runs (at commit only).
  long staged_here = 0;
  if (result.outcome == PageOutcome::kDrained && result.read_by_others) {
    if (stage_own_writes) {
      auto staged = stage_own_writes(conn, schema, transform.value());
      if (!staged.ok()) return staged.status();
      staged_here = staged.value();
    }
    if (staged_here == 0) {
      TRELLIS_RETURN_IF_ERROR(conn.Exec(
          workers::kNotifySql, {workers::WakeChannel(schema, "staging"), workers::WakeSender()}));
    }
  }
  TRELLIS_RETURN_IF_ERROR(tx.value()->Commit());
  // The readers' pages are committed: this process's drains start on them
  // now (other ports heard the staging statement's notify at the commit).
  if (staged_here > 0) workers::WorkerLoop::NudgeRole("drain");
  result.staged_own_writes = staged_here;
  return result;
}

}  // namespace trellis::drain
