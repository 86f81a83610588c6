#include "staging/ledger_pages.h"

#include "sql/quote.h"
#include "workers/locks.h"

namespace trellis::staging {

std::string PageDirtyKeysSql(const std::string& schema, int page_keys_param) {
  const std::string buckets = std::to_string(workers::kBuckets);
  const std::string page_keys = "$" + std::to_string(page_keys_param) + "::int";
  return R"sql(bucketed AS (
  SELECT transform_id, key, abs(hashtext(key::text) % )sql" +
         buckets + R"sql() AS bucket FROM dirty
), bucket_starts AS (
  -- Pages hold whole buckets, cut in bucket order: a drain locks the
  -- buckets of the pages it claims, so two pages that shared a bucket
  -- would make the second page's drain wait for the first's whole
  -- transaction. Whole buckets keep a backlog's pages disjoint, and drains
  -- of one transform run side by side.
  SELECT transform_id, bucket,
         sum(count(*)) OVER (PARTITION BY transform_id ORDER BY bucket) - count(*) AS keys_before
  FROM bucketed GROUP BY transform_id, bucket
), numbered AS (
  -- A page takes the buckets that start within its stretch of )sql" +
         page_keys + R"sql(
  -- keys; a bucket bigger than that is split over pages of its own (which
  -- then share that one bucket: unavoidable, and still correct).
  SELECT b.transform_id, b.key, b.bucket, s.keys_before / )sql" +
         page_keys + R"sql( AS stretch,
         (row_number() OVER (PARTITION BY b.transform_id, b.bucket ORDER BY b.key) - 1) / )sql" +
         page_keys + R"sql( AS part
  FROM bucketed b JOIN bucket_starts s USING (transform_id, bucket)
), paged AS (
  INSERT INTO )sql" +
         sql::Ident(schema) + R"sql(.pages (transform_id, buckets, keys, key_count)
  SELECT transform_id, array_agg(DISTINCT bucket ORDER BY bucket), array_agg(key), count(*)
  FROM numbered GROUP BY transform_id, stretch, part
  RETURNING id, key_count
))sql";
}

}  // namespace trellis::staging
