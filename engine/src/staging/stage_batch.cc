#include "staging/stage_batch.h"

#include "catalog/model.h"
#include "catalog/rebuild.h"
#include "sql/flat_rows.h"
#include "sql/quote.h"
#include "workers/locks.h"

namespace trellis::staging {
namespace {

// The dirty target key of a projection: the source key, which is the first
// routing values of every capture row (spec/engine.md "Capture").
std::string DirtyKeys(const catalog::Source& source) {
  const size_t n = source.key_columns.size();
  std::vector<std::string> parts;
  for (size_t i = 1; i <= n; ++i) parts.push_back("k.c" + std::to_string(i));
  return "SELECT DISTINCT ARRAY[" + sql::Join(parts, ", ") + "] AS key FROM trellis_staged s, " +
         sql::FlatRows("s.routing", "s.id", source.routing_columns.size(), n, "k") +
         " WHERE s.source_id = $2::int AND s.op <> 'T'";
}

}  // namespace

Result<long> StageBatch(pg::Connection& conn, const std::string& schema, int batch_rows,
                        int page_keys) {
  auto tx = pg::Transaction::Begin(conn);
  if (!tx.ok()) return tx.status();
  // Only committed capture rows are visible here, and each is deleted as it
  // is consumed: a writer that commits later is simply seen by a later batch,
  // so no cursor can skip past it.
  auto moved = conn.Query(sql::WithSchema(R"sql(
WITH consumed AS (
  DELETE FROM {schema}.capture
  WHERE id IN (SELECT id FROM {schema}.capture ORDER BY id LIMIT $1::int)
  RETURNING id, source_id, op, routing
)
INSERT INTO trellis_staged SELECT id, source_id, op, routing FROM consumed)sql",
                                          schema),
                          {std::to_string(batch_rows)});
  if (!moved.ok()) return moved.status();
  if (moved->affected == 0) {
    TRELLIS_RETURN_IF_ERROR(tx.value()->Commit());
    return 0L;
  }
  auto transforms = catalog::LoadTransforms(conn, schema);
  if (!transforms.ok()) return transforms.status();
  auto truncated = conn.Query("SELECT DISTINCT source_id FROM trellis_staged WHERE op = 'T'");
  if (!truncated.ok()) return truncated.status();

  for (const auto& t : transforms.value()) {
    const std::string source_id = std::to_string(t.source.id);
    for (size_t r = 0; r < truncated->size(); ++r) {
      if (truncated->text(r, 0) == source_id) {
        // TRUNCATE leaves no keys to recompute: rebuild the whole target.
        TRELLIS_RETURN_IF_ERROR(catalog::RequestRebuild(conn, schema, t.id, std::nullopt));
      }
    }
    const std::string buckets = std::to_string(workers::kBuckets);
    TRELLIS_RETURN_IF_ERROR(conn.Exec(
        sql::WithSchema(R"sql(
INSERT INTO {schema}.pages (transform_id, bucket, keys, key_count)
SELECT $1::int, bucket, array_agg(key), count(*)
FROM (
  SELECT key, bucket, (row_number() OVER (PARTITION BY bucket) - 1) / $3::int AS chunk
  FROM (
    SELECT key, abs(hashtext(key::text) % )sql" + buckets + R"sql() AS bucket
    FROM ()sql" + DirtyKeys(t.source) + R"sql() AS distinct_keys
  ) AS bucketed
) AS chunked
GROUP BY bucket, chunk)sql",
                        schema),
        {std::to_string(t.id), source_id, std::to_string(page_keys)}));
  }
  TRELLIS_RETURN_IF_ERROR(conn.Exec("TRUNCATE trellis_staged"));
  TRELLIS_RETURN_IF_ERROR(tx.value()->Commit());
  return moved->affected;
}

Status PromoteCaughtUp(pg::Connection& conn, const std::string& schema) {
  return conn.Exec(sql::WithSchema(R"sql(
UPDATE {schema}.transforms t SET status = 'live'
WHERE t.status = 'catching_up'
  AND NOT EXISTS (SELECT 1 FROM {schema}.pages p
                  WHERE p.transform_id = t.id AND p.id <= coalesce(t.catch_up_page, 0)))sql",
                                   schema));
}

}  // namespace trellis::staging
