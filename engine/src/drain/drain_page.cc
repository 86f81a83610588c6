#include "drain/drain_page.h"

#include <spdlog/spdlog.h>

#include "catalog/model.h"
#include "drain/recompute.h"
#include "sql/quote.h"
#include "workers/locks.h"

namespace trellis::drain {
namespace {

std::string IntArray(const std::set<int>& ids) {
  std::vector<std::string> parts;
  for (int id : ids) parts.push_back(std::to_string(id));
  return "{" + sql::Join(parts, ",") + "}";
}

// Records a failed page for a retry with exponential backoff (capped at a
// minute); nothing is paused or dropped, and status shows the error.
Status MarkFailed(pg::Connection& conn, const std::string& schema, const std::string& page_id,
                  const Status& error) {
  return conn.Exec(sql::WithSchema(R"sql(
UPDATE {schema}.pages SET attempts = attempts + 1, last_error = $2,
  retry_at = now() + least(interval '60 seconds', interval '100 milliseconds' * power(2, attempts))
WHERE id = $1::bigint)sql",
                                   schema),
                   {page_id, error.message()});
}

}  // namespace

Result<PageResult> DrainOnePage(pg::Connection& conn, const std::string& schema,
                                const std::set<int>& skip) {
  auto tx = pg::Transaction::Begin(conn);
  if (!tx.ok()) return tx.status();
  auto page = conn.Query(sql::WithSchema(R"sql(
SELECT p.id, p.transform_id, p.bucket, p.keys, p.key_count
FROM {schema}.pages p JOIN {schema}.transforms t ON t.id = p.transform_id
WHERE t.status <> 'paused' AND (p.retry_at IS NULL OR p.retry_at <= now())
  AND p.transform_id <> ALL($1::int[])
ORDER BY p.id LIMIT 1
FOR UPDATE OF p SKIP LOCKED)sql",
                                         schema),
                         {IntArray(skip)});
  if (!page.ok()) return page.status();
  if (page->empty()) {
    TRELLIS_RETURN_IF_ERROR(tx.value()->Commit());
    return PageResult{};
  }
  const std::string page_id = page->text(0, 0);
  const std::string transform_id = page->text(0, 1);
  const int tid = std::stoi(transform_id);
  const long keys = std::stol(page->text(0, 4));

  // A backfill chunk holds the transform lock exclusively: leave its pages
  // for later instead of idling this thread behind it.
  auto shared = conn.Query("SELECT pg_try_advisory_xact_lock_shared(" +
                               workers::TransformLockSpace() + ", $2::int)",
                           {schema, transform_id});
  if (!shared.ok()) return shared.status();
  if (shared->text(0, 0) != "t") return PageResult{PageOutcome::kBusy, tid, 0};
  // Serialise with any other drain of the same keys before reading the
  // source, so an older snapshot can never overwrite a newer one.
  TRELLIS_RETURN_IF_ERROR(conn.Exec("SELECT pg_advisory_xact_lock(" + workers::BucketLockSpace() +
                                        ", $2::int * " + std::to_string(workers::kBuckets) +
                                        " + $3::int)",
                                    {schema, transform_id, page->text(0, 2)}));

  auto transform = catalog::LoadTransformById(conn, schema, tid);
  if (!transform.ok()) return transform.status();
  TRELLIS_RETURN_IF_ERROR(conn.Exec("SAVEPOINT trellis_page"));
  auto applied = conn.Query(ApplyKeysSql(transform.value()), {page->at(0, 3)});
  if (!applied.ok()) {
    if (applied.status().code() == Code::kConnection) return applied.status();
    TRELLIS_RETURN_IF_ERROR(conn.Exec("ROLLBACK TO SAVEPOINT trellis_page"));
    spdlog::warn("trellis_instance={}/{} page {} of transform {} failed: {}", conn.database(),
                 schema, page_id, transform->name(), applied.status().message());
    TRELLIS_RETURN_IF_ERROR(MarkFailed(conn, schema, page_id, applied.status()));
    TRELLIS_RETURN_IF_ERROR(tx.value()->Commit());
    return PageResult{PageOutcome::kFailed, tid, keys};
  }
  TRELLIS_RETURN_IF_ERROR(conn.Exec(
      sql::WithSchema("DELETE FROM {schema}.pages WHERE id = $1::bigint", schema), {page_id}));
  TRELLIS_RETURN_IF_ERROR(conn.Exec(
      // Coarse on purpose: drains of one transform would otherwise queue on
      // this row's lock at every commit.
      sql::WithSchema("UPDATE {schema}.transforms SET last_applied_at = now() WHERE id = $1::int "
                      "AND (last_applied_at IS NULL OR last_applied_at < now() - "
                      "interval '100 milliseconds')",
                      schema),
      {transform_id}));
  TRELLIS_RETURN_IF_ERROR(tx.value()->Commit());
  return PageResult{PageOutcome::kDrained, tid, keys};
}

}  // namespace trellis::drain
