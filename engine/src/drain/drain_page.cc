#include "drain/drain_page.h"

#include "catalog/model.h"
#include "catalog/states.h"
#include "drain/page_unit.h"
#include "plan/bind.h"
#include "sql/quote.h"
#include "sql/row_reader.h"
#include "workers/locks.h"

namespace trellis::drain {
namespace {

std::string IntArray(const std::set<int>& ids) {
  std::vector<std::string> parts;
  for (int id : ids) parts.push_back(std::to_string(id));
  return "{" + sql::Join(parts, ",") + "}";
}

// Claims the oldest claimable page of a transform that is not paused, and
// with it the next pages of the same transform, up to the limits: one
// recompute then serves them all. SKIP LOCKED: other drains take others.
// The same statement then takes the transform's lock shared, if it can (a
// rebuild's range holds it exclusively: `free` is false and the caller
// leaves these pages for later instead of idling behind it), and, when it
// did, the locks of the pages' key buckets, so two drains of the same keys
// never interleave and an older snapshot can never overwrite a newer one.
// Buckets are locked in ascending order (the sorted subquery), so two drains
// wanting overlapping sets cannot deadlock. The source is read by later
// statements, whose snapshots come after these locks. One statement, not
// three: each round trip is latency on every write (bench/README.md).
std::string ClaimSql(const std::string& schema) {
  return catalog::StateSql(R"sql(
WITH head AS (
  SELECT p.transform_id FROM {schema}.pages p JOIN {schema}.transforms t ON t.id = p.transform_id
  WHERE t.status <> {state:paused} AND t.key_indexed
    AND (p.retry_at IS NULL OR p.retry_at <= now())
    AND p.transform_id <> ALL($2::int[])
  ORDER BY p.id LIMIT 1
  FOR UPDATE OF p SKIP LOCKED
), claimed AS (
  SELECT p.id, p.transform_id, p.buckets, p.key_count, p.attempts FROM {schema}.pages p
  WHERE p.transform_id = (SELECT transform_id FROM head)
    AND (p.retry_at IS NULL OR p.retry_at <= now())
  ORDER BY p.id LIMIT $3::int
  FOR UPDATE OF p SKIP LOCKED
), bounded AS (
  SELECT *, sum(key_count) OVER (ORDER BY id) - key_count AS keys_before FROM claimed
), picked AS (
  SELECT transform_id, array_agg(id) AS ids, count(*) AS pages, sum(key_count) AS keys,
         ARRAY(SELECT DISTINCT b FROM bounded, unnest(buckets) AS b
               WHERE keys_before < $4::int ORDER BY b) AS buckets,
         max(attempts) AS attempts
  FROM bounded WHERE keys_before < $4::int GROUP BY transform_id
), shared AS MATERIALIZED (
  SELECT picked.*,
         pg_try_advisory_xact_lock_shared()sql" +
                               workers::TransformLockSpace() + R"sql(, transform_id) AS free
  FROM picked
)
SELECT transform_id, ids, pages, keys, attempts, free,
       CASE WHEN free THEN
         (SELECT count(pg_advisory_xact_lock()sql" +
                               workers::BucketLockSpace() + ", s.transform_id * " +
                               std::to_string(workers::kBuckets) + R"sql( + b))
          FROM (SELECT b FROM unnest(s.buckets) AS b ORDER BY b) AS sorted)
       END
FROM shared s)sql",
                           schema);
}

}  // namespace

Result<PageResult> DrainPages(pg::Connection& conn, const std::string& schema,
                              const std::set<int>& skip, UnitExecutor& executor) {
  pg::Rows claim;
  auto tx = pg::Transaction::BeginWith(
      conn, ClaimSql(schema),
      {schema, IntArray(skip), std::to_string(kMaxPagesPerClaim), std::to_string(kKeysPerClaim)},
      &claim);
  if (!tx.ok()) return tx.status();
  if (claim.empty()) {
    TRELLIS_RETURN_IF_ERROR(tx.value()->Commit());
    return PageResult{};
  }
  sql::RowReader claimed(claim, 0);
  const int tid = claimed.Int(0);
  const std::string page_ids = claimed.Text(1);
  PageResult result{PageOutcome::kDrained, tid, claimed.Int64(2), claimed.Int64(3)};
  const bool retrying = claimed.Int64(4) != 0;
  const bool free = claimed.Bool(5);
  if (!claimed.status().ok()) return claimed.status();
  // A rebuild's range holds the transform: its pages wait (rolled back).
  if (!free) return PageResult{PageOutcome::kBusy, tid, 0, 0};

  auto transform = catalog::LoadTransformById(conn, schema, tid);
  if (!transform.ok()) return transform.status();
  auto plan = plan::Bind(transform.value(), schema);
  if (!plan.ok()) return plan.status();
  PagesUnit unit(*plan.value(), schema, page_ids);
  auto ran = executor.Run(conn, schema, transform.value(), unit, RunOptions{.retrying = retrying});
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
  TRELLIS_RETURN_IF_ERROR(tx.value()->Commit());
  return result;
}

}  // namespace trellis::drain
