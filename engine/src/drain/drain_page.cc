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
std::string ClaimSql(const std::string& schema) {
  return catalog::StateSql(R"sql(
WITH head AS (
  SELECT p.transform_id FROM {schema}.pages p JOIN {schema}.transforms t ON t.id = p.transform_id
  WHERE t.status <> {state:paused} AND t.key_indexed
    AND (p.retry_at IS NULL OR p.retry_at <= now())
    AND p.transform_id <> ALL($1::int[])
  ORDER BY p.id LIMIT 1
  FOR UPDATE OF p SKIP LOCKED
), claimed AS (
  SELECT p.id, p.transform_id, p.buckets, p.key_count, p.attempts FROM {schema}.pages p
  WHERE p.transform_id = (SELECT transform_id FROM head)
    AND (p.retry_at IS NULL OR p.retry_at <= now())
  ORDER BY p.id LIMIT $2::int
  FOR UPDATE OF p SKIP LOCKED
), bounded AS (
  SELECT *, sum(key_count) OVER (ORDER BY id) - key_count AS keys_before FROM claimed
)
SELECT transform_id, array_agg(id), count(*), sum(key_count),
       ARRAY(SELECT DISTINCT b FROM bounded, unnest(buckets) AS b
             WHERE keys_before < $3::int ORDER BY b),
       max(attempts)
FROM bounded WHERE keys_before < $3::int GROUP BY transform_id)sql",
                           schema);
}

}  // namespace

Result<PageResult> DrainPages(pg::Connection& conn, const std::string& schema,
                              const std::set<int>& skip, UnitExecutor& executor) {
  auto tx = pg::Transaction::Begin(conn);
  if (!tx.ok()) return tx.status();
  auto claim = conn.Query(ClaimSql(schema), {IntArray(skip), std::to_string(kMaxPagesPerClaim),
                                             std::to_string(kKeysPerClaim)});
  if (!claim.ok()) return claim.status();
  if (claim->empty()) {
    TRELLIS_RETURN_IF_ERROR(tx.value()->Commit());
    return PageResult{};
  }
  sql::RowReader claimed(claim.value(), 0);
  const int tid = claimed.Int(0);
  const std::string page_ids = claimed.Text(1);
  PageResult result{PageOutcome::kDrained, tid, claimed.Int64(2), claimed.Int64(3)};
  if (!claimed.status().ok()) return claimed.status();
  const std::string transform_id = std::to_string(tid);

  // A rebuild's range holds the transform lock exclusively: leave its pages
  // for later instead of idling this thread behind it.
  auto shared = conn.Query(
      "SELECT pg_try_advisory_xact_lock_shared(" + workers::TransformLockSpace() + ", $2::int)",
      {schema, transform_id});
  if (!shared.ok()) return shared.status();
  if (shared->text(0, 0) != "t") return PageResult{PageOutcome::kBusy, tid, 0, 0};
  // Serialise with any other drain of the same keys before reading the
  // source, so an older snapshot can never overwrite a newer one. Buckets are
  // locked in ascending order (the sorted subquery), so two drains wanting
  // overlapping sets cannot deadlock.
  TRELLIS_RETURN_IF_ERROR(
      conn.Exec("SELECT count(pg_advisory_xact_lock(" + workers::BucketLockSpace() +
                    ", $2::int * " + std::to_string(workers::kBuckets) +
                    " + b)) FROM (SELECT b FROM unnest($3::int[]) AS b ORDER BY b) AS sorted",
                {schema, transform_id, claim->at(0, 4)}));

  auto transform = catalog::LoadTransformById(conn, schema, tid);
  if (!transform.ok()) return transform.status();
  auto plan = plan::Bind(transform.value(), schema);
  if (!plan.ok()) return plan.status();
  PagesUnit unit(*plan.value(), schema, page_ids);
  auto ran = executor.Run(conn, schema, transform.value(), unit,
                          RunOptions{.retrying = claim->text(0, 5) != "0"});
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
