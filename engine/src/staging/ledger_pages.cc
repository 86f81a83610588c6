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
  // With delta rows, `dirty` holds one row per change row (a key repeats):
  // a row version, or a plan's folded row of one writer and sign
  // (plan/group_deltas.h; staging only carries its `folded` flag). The
  // change rows are grouped by key first (a hash aggregate over them, no
  // sort), each key carrying its change rows as an array of delta_rows
  // rows (page_id 0 until its page is known), and everything after works
  // on one row per key: the ranking windows sort keys, not change rows
  // (they sorted every change row by its text[] key: 22 ms of a 71 ms
  // staging statement for 1,998 changes, bench/README.md). The change rows
  // are never joined back to their keys on the key (a join on text[] the
  // planner misjudged ran as a nested loop of every change row by every
  // key): they are unnested from their key's row once its page is known.
  //
  // A key with any change row of NULL sign (one that is not a delta: a
  // write naming a relation no longer under the source) is recomputed, so
  // none of its change rows in this batch becomes a delta row: the
  // recompute reads their writers, who committed before this batch.
  const std::string changes =
      delta_rows ? ",\n         bool_or(d.sign IS NULL) AS recomputed,"
                   "\n         pg_catalog.array_agg((0::bigint, d.xid, d.sign, d.key, "
                   "d.row_values, d.folded)::" +
                       sql::Ident(schema) +
                       ".delta_rows) AS changes,"
                       "\n         min(pg_catalog.cardinality(d.row_values)) AS min_width,"
                       "\n         max(pg_catalog.cardinality(d.row_values)) AS max_width"
                 : "";
  const std::string columns = delta_rows ? ", sign, xid, row_values, folded" : "";
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
  const std::string out = R"sql(keyed AS (
  -- One row per key (the GROUP BY is hashed), its bucket computed once.
  SELECT d.transform_id, d.key, )sql" +
                          sql::KeyBucket(LockedKey(lock_widths), workers::kBuckets) +
                          R"sql( AS bucket)sql" + changes + R"sql(
  FROM (SELECT transform_id, key)sql" +
                          columns +
                          R"sql( FROM dirty) AS d
  GROUP BY d.transform_id, d.key
), ranked AS (
  -- A key's rank among the keys of its transform, in (bucket, key) order,
  -- and among those of its bucket: the difference is the number of keys
  -- in the buckets before its own. Windows over one sort of the keys, no
  -- join (a join of the keys with per-bucket counts, misestimated at one
  -- row, ran the counts again for every key).
  SELECT k.*, row_number() OVER (PARTITION BY k.transform_id ORDER BY k.bucket, k.key) AS in_transform,
         row_number() OVER (PARTITION BY k.transform_id, k.bucket ORDER BY k.key) AS in_bucket,
         count(*) OVER (PARTITION BY k.transform_id) AS keys_in_transform
  FROM keyed k
), numbered AS (
  -- The page of the buckets starting in the same share of the keys, and
  -- the part of a big bucket.
  SELECT r.*, (r.in_transform - r.in_bucket) * ((r.keys_in_transform + )sql" +
                          page_keys + R"sql( - 1) / )sql" + page_keys +
                          R"sql() / r.keys_in_transform AS stretch,
         (r.in_bucket - 1) / )sql" +
                          page_keys + R"sql( AS part
  FROM ranked r
))sql";
  // Page ids are drawn in (part, stretch) order: the parts of a big bucket
  // get ids far apart, so the pages a drain claims together, and those the
  // next drain claims, hold different buckets. (In (stretch, part) order
  // the two drains claimed parts of one bucket and ran one after the other:
  // benchmark 4 drained in 2.3 s instead of 1.3 s.) Keys are distinct
  // here, so a page lists them in their rank's order, an integer sort.
  const std::string aggregates =
      "array_agg(DISTINCT n.bucket ORDER BY n.bucket), array_agg(n.key ORDER BY n.in_transform), "
      "count(*)";
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
), keyed_pages AS MATERIALIZED (
  -- Each key with its page (a join of keys, not of change rows, by
  -- integers).
  SELECT c.page_id, n.*
  FROM numbered AS n
  JOIN chunks AS c ON c.transform_id = n.transform_id AND c.stretch = n.stretch AND c.part = n.part
), paged AS (
  INSERT INTO )sql" +
         pages + R"sql( (id, transform_id, buckets, keys, key_count, delta_count, covered_width)
  SELECT n.page_id, n.transform_id, )sql" +
         aggregates + R"sql(,
         -- The rows delta_paged writes for this page: a drain's claim is
         -- capped by them (drain/drain_page.h).
         coalesce(sum(pg_catalog.cardinality(n.changes)) FILTER (WHERE NOT n.recomputed), 0),
         -- Every key with its delta rows, all of one width: the drain by
         -- deltas has no key left to recompute (catalog step 23). A
         -- transform staging keys only has NULL rows, always recomputed.
         CASE WHEN bool_and(NOT n.recomputed) AND min(n.min_width) = max(n.max_width)
              THEN min(n.min_width) END
  FROM keyed_pages AS n
  GROUP BY n.page_id, n.transform_id
  RETURNING id, key_count
), delta_paged AS (
  INSERT INTO )sql" +
         sql::Ident(schema) + R"sql(.delta_rows (page_id, xid, sign, key, row_values, folded)
  SELECT n.page_id, c.xid, c.sign, c.key, c.row_values, c.folded
  FROM keyed_pages AS n, pg_catalog.unnest(n.changes) AS c
  WHERE NOT n.recomputed
  RETURNING 1
))sql";
}

}  // namespace trellis::staging
