#include "drain/backfill_chunk.h"

#include "catalog/model.h"
#include "drain/recompute.h"
#include "sql/quote.h"
#include "trellis/engine_metrics.h"
#include "workers/locks.h"

namespace trellis::drain {
namespace {

// The source's row count for backfill progress: the planner's estimate when
// the table has been analysed (free), else an exact count (a scan, once).
std::string TotalRowsSql(const catalog::Transform& t) {
  const std::string table = sql::Qualified(t.source.schema_name, t.source.table_name);
  return "(SELECT CASE WHEN c.reltuples >= 0 THEN c.reltuples::bigint ELSE (SELECT count(*) FROM " +
         table + ") END FROM pg_class c WHERE c.oid = " + sql::Literal(table) + "::regclass)";
}

}  // namespace

Result<bool> BackfillOneChunk(pg::Connection& conn, const std::string& schema, long chunk_rows) {
  auto tx = pg::Transaction::Begin(conn);
  if (!tx.ok()) return tx.status();
  auto next = conn.Query(sql::WithSchema(R"sql(
SELECT id FROM {schema}.transforms
WHERE status IN ('waiting_to_backfill', 'backfilling') ORDER BY id LIMIT 1)sql",
                                         schema));
  if (!next.ok()) return next.status();
  if (next->empty()) {
    TRELLIS_RETURN_IF_ERROR(tx.value()->Commit());
    return false;
  }
  const std::string id = next->text(0, 0);
  // Exclusive: no drain of this transform reads or writes while the chunk's
  // snapshot is in use (drains take it shared). Taken before the row lock:
  // a drain holding the shared lock may still update the transform's row.
  TRELLIS_RETURN_IF_ERROR(
      conn.Exec("SELECT pg_advisory_xact_lock(" + workers::TransformLockSpace() + ", $2::int)",
                {schema, id}));
  auto owned = conn.Query(
      sql::WithSchema("SELECT 1 FROM {schema}.transforms WHERE id = $1::int AND status IN "
                      "('waiting_to_backfill', 'backfilling') FOR UPDATE SKIP LOCKED",
                      schema),
      {id});
  if (!owned.ok()) return owned.status();
  if (owned->empty()) return true;  // paused, finished or dropped meanwhile: look again
  // Read after the locks, so the cursor is the one the previous chunk left.
  auto t = catalog::LoadTransformById(conn, schema, std::stoi(id));
  if (!t.ok()) return t.status();

  if (t->status == "waiting_to_backfill") {
    TRELLIS_RETURN_IF_ERROR(conn.Exec(
        sql::WithSchema(
            "UPDATE {schema}.transforms SET status = 'backfilling', backfill_started_at = now(), "
            "backfill_done = 0, backfill_total = " +
                TotalRowsSql(t.value()) + " WHERE id = $1::int",
            schema),
        {id}));
  }

  std::optional<std::string> lo;
  if (t->backfill_cursor) lo = sql::ArrayLiteral(*t->backfill_cursor);
  auto hi_rows = conn.Query(NextCursorSql(t.value()), {lo, std::to_string(chunk_rows)});
  if (!hi_rows.ok()) return hi_rows.status();
  std::optional<std::string> hi;
  if (!hi_rows->empty()) hi = hi_rows->at(0, 0);

  // The first build appends (the target has no key yet and no row of this
  // range); a rebuild recomputes the range in place.
  auto applied = conn.Query(
      t->key_indexed ? ApplyRangeSql(t.value(), t->backfill_columns) : AppendRangeSql(t.value()),
      {lo, hi});
  if (!applied.ok()) return applied.status();
  // A recompute reports (written, deleted) as a row; an append its count.
  const long written = t->key_indexed
                           ? std::stol(applied->text(0, 0)) + std::stol(applied->text(0, 1))
                           : applied->affected;
  if (!hi && !t->key_indexed) {
    TRELLIS_RETURN_IF_ERROR(conn.Exec(AddKeySql(t.value())));
  }
  // Counted before the commit: a chunk that fails to commit is redone, and
  // its rows counted again (the counter measures work, not distinct rows).
  GlobalEngineMetrics().backfill_rows.fetch_add(static_cast<uint64_t>(written),
                                                std::memory_order_relaxed);

  if (hi) {
    TRELLIS_RETURN_IF_ERROR(
        conn.Exec(sql::WithSchema("UPDATE {schema}.transforms SET backfill_cursor = $2::text[], "
                                  "backfill_done = backfill_done + $3::bigint WHERE id = $1::int",
                                  schema),
                  {id, hi, std::to_string(chunk_rows)}));
  } else {
    // Done: keys written since the backfill began are in the ledger; the
    // transform is live once the pages that exist now are drained.
    TRELLIS_RETURN_IF_ERROR(conn.Exec(sql::WithSchema(R"sql(
UPDATE {schema}.transforms SET
  status = 'catching_up', backfill_cursor = NULL, backfill_finished_at = now(), key_indexed = true,
  backfill_done = greatest(backfill_done, coalesce(backfill_total, 0)),
  last_applied_at = now(),
  catch_up_page = (SELECT max(id) FROM {schema}.pages WHERE transform_id = $1::int)
WHERE id = $1::int)sql",
                                                      schema),
                                      {id}));
  }
  TRELLIS_RETURN_IF_ERROR(tx.value()->Commit());
  return true;
}

}  // namespace trellis::drain
