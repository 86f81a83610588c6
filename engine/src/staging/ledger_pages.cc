#include "staging/ledger_pages.h"

#include "sql/key_text.h"
#include "sql/quote.h"
#include "workers/locks.h"

namespace trellis::staging {
namespace {

// What a dirty row's bucket hashes: `key`, or its leading values for a
// transform of `lock_widths`.
std::string LockedKey(const std::map<int, size_t>& lock_widths) {
  if (lock_widths.empty()) return "key";
  std::string out = "CASE transform_id";
  for (const auto& [id, width] : lock_widths) {
    out += " WHEN " + std::to_string(id) + " THEN key[1:" + std::to_string(width) + "]";
  }
  return out + " ELSE key END";
}

}  // namespace

std::string PageDirtyKeysSql(const std::string& schema, int page_keys_param, bool delta_rows,
                             const std::map<int, size_t>& lock_widths) {
  const std::string page_keys = "$" + std::to_string(page_keys_param) + "::int";
  const std::string pages = sql::Ident(schema) + ".pages";
  // With delta rows, `dirty` holds one row per change (a key repeats): keys
  // are counted and ranked distinct, and each change row finds its page by
  // the (stretch, part) it is numbered with, never by joining on the key
  // (a join on text[] the planner misjudged ran as a nested loop of every
  // change row by every key).
  const std::string changes = delta_rows ? ", sign, xid, row_values" : "";
  // A key with any change row of NULL sign (one that is not a delta: a write
  // naming a relation no longer under the source) is recomputed, so none
  // of its change rows in this batch becomes a delta row: the recompute
  // reads their writers, who committed before this batch. Partitioned by
  // (transform, bucket, key), the order the pages are ranked in, so one
  // sort serves both windows.
  const std::string recomputed =
      delta_rows ? ",\n         bool_or(b.sign IS NULL) OVER (PARTITION BY b.transform_id, "
                   "b.bucket, b.key) AS recomputed"
                 : "";
  // Pages hold whole buckets. A drain locks the buckets of the pages it
  // claims, so two pages of one batch that shared a bucket would make the
  // drain of the second wait for the first's whole transaction: with whole
  // buckets a batch's pages are disjoint and two drains of one transform run
  // them side by side. A batch of n keys makes ceil(n / page_keys) pages; a
  // page takes the buckets whose first key falls in its even share of the
  // (bucket, key) order, so pages are about n / pages keys each (under twice
  // page_keys); a bucket with more keys than page_keys goes on over pages of
  // its own (`part`), which then share that one bucket.
  //
  // Every count is a bigint and every division an integer one. (A first cut
  // by whole buckets summed the counts, a numeric, so each page's share was
  // a fraction and every bucket got a page of its own: a steady stream of
  // writes then made sixty-odd pages of one to seven keys per batch, the
  // drains fell behind for good, and a self-check under those writes never
  // found its keys free of pending work.)
  const std::string out = R"sql(bucketed AS (
  SELECT transform_id, key, )sql" +
                          sql::KeyBucket(LockedKey(lock_widths), workers::kBuckets) +
                          R"sql( AS bucket)sql" + changes + R"sql( FROM dirty
), ranked AS (
  -- A key's rank among the distinct keys of its transform, in (bucket, key)
  -- order, and among those of its bucket: the difference is the number of
  -- keys in the buckets before its own. Windows over one sort, no join (a
  -- join of the keys with per-bucket counts, misestimated at one row, ran
  -- the counts again for every key).
  SELECT b.*, dense_rank() OVER (PARTITION BY b.transform_id ORDER BY b.bucket, b.key) AS in_transform,
         dense_rank() OVER (PARTITION BY b.transform_id, b.bucket ORDER BY b.key) AS in_bucket)sql" +
                          recomputed + R"sql(
  FROM bucketed b
), numbered AS (
  -- The page of the buckets starting in the same share of the keys, and
  -- the part of a big bucket.
  SELECT r.*, (r.in_transform - r.in_bucket) * ((max(r.in_transform) OVER w + )sql" +
                          page_keys + R"sql( - 1) / )sql" + page_keys +
                          R"sql() / max(r.in_transform) OVER w AS stretch,
         (r.in_bucket - 1) / )sql" +
                          page_keys + R"sql( AS part
  FROM ranked r WINDOW w AS (PARTITION BY r.transform_id)
))sql";
  // Page ids are drawn in (part, stretch) order: the parts of a big bucket
  // get ids far apart, so the pages a drain claims together, and those the
  // next drain claims, hold different buckets. (In (stretch, part) order
  // the two drains claimed parts of one bucket and ran one after the other:
  // benchmark 4 drained in 2.3 s instead of 1.3 s.)
  const std::string aggregates =
      "array_agg(DISTINCT n.bucket ORDER BY n.bucket), array_agg(DISTINCT n.key), "
      "count(DISTINCT n.key)";
  if (!delta_rows) {
    // Without delta rows nothing needs a page's id before it is inserted:
    // one aggregate per page, no join. (The join below, estimated at one
    // row, runs as a nested loop of keys by pages: a second per 200,000
    // keys in one batch.)
    return out + R"sql(, paged AS (
  INSERT INTO )sql" +
           pages + R"sql( (transform_id, buckets, keys, key_count, delta_count)
  SELECT n.transform_id, )sql" +
           aggregates + R"sql(, 0
  FROM numbered AS n GROUP BY n.transform_id, n.stretch, n.part
  ORDER BY n.transform_id, n.part, n.stretch
  RETURNING id, key_count
))sql";
  }
  return out + R"sql(, chunks AS (
  -- Each page's id is drawn first, so that delta rows can name their page.
  SELECT transform_id, stretch, part, nextval(pg_get_serial_sequence()sql" +
         sql::Literal(pages) + R"sql(, 'id')) AS page_id
  FROM numbered GROUP BY transform_id, stretch, part
  ORDER BY transform_id, part, stretch
), paged AS (
  INSERT INTO )sql" +
         pages + R"sql( (id, transform_id, buckets, keys, key_count, delta_count, covered_width)
  SELECT c.page_id, n.transform_id, )sql" +
         aggregates + R"sql(,
         -- The rows delta_paged writes for this page: a drain's claim is
         -- capped by them (drain/drain_page.h).
         count(*) FILTER (WHERE NOT n.recomputed),
         -- Every key with its delta rows, all of one width: the drain by
         -- deltas has no key left to recompute (catalog step 23). A
         -- transform staging keys only has NULL rows, always recomputed.
         CASE WHEN bool_and(NOT n.recomputed)
                   AND min(pg_catalog.cardinality(n.row_values))
                       = max(pg_catalog.cardinality(n.row_values))
              THEN min(pg_catalog.cardinality(n.row_values)) END
  FROM numbered AS n
  JOIN chunks AS c ON c.transform_id = n.transform_id AND c.stretch = n.stretch AND c.part = n.part
  GROUP BY c.page_id, n.transform_id
  RETURNING id, key_count
), delta_paged AS (
  INSERT INTO )sql" +
         sql::Ident(schema) + R"sql(.delta_rows (page_id, xid, sign, key, row_values)
  SELECT c.page_id, n.xid, n.sign, n.key, n.row_values
  FROM numbered AS n
  JOIN chunks AS c ON c.transform_id = n.transform_id AND c.stretch = n.stretch AND c.part = n.part
  WHERE NOT n.recomputed
  RETURNING 1
))sql";
}

}  // namespace trellis::staging
