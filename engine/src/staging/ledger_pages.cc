#include "staging/ledger_pages.h"

#include "sql/quote.h"
#include "workers/locks.h"

namespace trellis::staging {

std::string PageDirtyKeysSql(const std::string& schema, int page_keys_param) {
  const std::string buckets = std::to_string(workers::kBuckets);
  return R"sql(bucketed AS (
  SELECT transform_id, key, abs(hashtext(key::text) % )sql" +
         buckets + R"sql() AS bucket FROM dirty
), numbered AS (
  -- Pages are cut in bucket order: a big backlog's pages then cover few
  -- buckets each, so drains of one transform lock disjoint buckets and run
  -- side by side instead of queueing on every bucket.
  SELECT transform_id, key, bucket,
         (row_number() OVER (PARTITION BY transform_id ORDER BY bucket, key) - 1) / $)sql" +
         std::to_string(page_keys_param) + R"sql(::int AS chunk
  FROM bucketed
), paged AS (
  INSERT INTO )sql" +
         sql::Ident(schema) + R"sql(.pages (transform_id, buckets, keys, key_count)
  SELECT transform_id, array_agg(DISTINCT bucket ORDER BY bucket), array_agg(key), count(*)
  FROM numbered GROUP BY transform_id, chunk
  RETURNING id, key_count
))sql";
}

}  // namespace trellis::staging
