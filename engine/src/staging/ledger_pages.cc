#include "staging/ledger_pages.h"

#include "sql/quote.h"
#include "workers/locks.h"

namespace trellis::staging {

std::string PageDirtyKeysSql(const std::string& schema, int page_keys_param, bool delta_rows) {
  const std::string buckets = std::to_string(workers::kBuckets);
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
  std::string out = R"sql(bucketed AS (
  SELECT transform_id, key, abs(hashtext(key::text) % )sql" +
                    buckets + R"sql() AS bucket)sql" + changes + R"sql( FROM dirty
), numbered AS (
  -- Pages of )sql" +
                    page_keys + R"sql( distinct keys, cut in bucket order, so a
  -- big backlog's pages cover few buckets each. (Pages of whole buckets were
  -- tried in session 6 and reverted: under steady writes a self-check then
  -- stayed unsettled, cause not yet found; see spec/engine.md "Staging".)
  SELECT b.*, (dense_rank() OVER (PARTITION BY b.transform_id ORDER BY b.bucket, b.key) - 1) / )sql" +
                    page_keys + R"sql( AS stretch,
         0 AS part)sql" +
                    recomputed + R"sql(
  FROM bucketed b
), chunks AS (
  -- Each page's id is drawn first, so that delta rows can name their page.
  SELECT transform_id, stretch, part, nextval(pg_get_serial_sequence()sql" +
                    sql::Literal(pages) + R"sql(, 'id')) AS page_id
  FROM numbered GROUP BY transform_id, stretch, part
), paged AS (
  INSERT INTO )sql" +
                    pages +
                    R"sql( (id, transform_id, buckets, keys, key_count)
  SELECT c.page_id, n.transform_id, array_agg(DISTINCT n.bucket ORDER BY n.bucket),
         array_agg(DISTINCT n.key), count(DISTINCT n.key)
  FROM numbered AS n
  JOIN chunks AS c ON c.transform_id = n.transform_id AND c.stretch = n.stretch AND c.part = n.part
  GROUP BY c.page_id, n.transform_id
  RETURNING id, key_count
))sql";
  if (!delta_rows) return out;
  return out + R"sql(, delta_paged AS (
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
