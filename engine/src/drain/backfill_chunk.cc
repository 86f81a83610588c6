#include "drain/backfill_chunk.h"

#include "catalog/model.h"
#include "catalog/states.h"
#include "drain/first_build.h"
#include "drain/recompute.h"
#include "drain/schema_change.h"
#include "sql/quote.h"
#include "trellis/engine_metrics.h"
#include "workers/locks.h"

namespace trellis::drain {
namespace {

// The source's row count, for backfill progress and for planning a first
// build's ranges: the planner's rows-per-page scaled to the table's size now
// when it has been analysed with rows in it (free), else an exact count.
std::string TotalRowsSql(const catalog::Transform& t) {
  const std::string table = sql::Qualified(t.source.schema_name, t.source.table_name);
  return "(SELECT CASE WHEN c.reltuples > 0 AND c.relpages > 0 THEN (c.reltuples / c.relpages * "
         "(pg_relation_size(c.oid) / current_setting('block_size')::bigint))::bigint "
         "ELSE (SELECT count(*) FROM " +
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
  // Paused, finished or dropped meanwhile, or appends of its first build are
  // running (they hold the row shared): nothing for this worker now.
  if (owned->empty()) return false;
  // Read after the locks, so the cursor is the one the previous chunk left.
  auto t = catalog::LoadTransformById(conn, schema, std::stoi(id));
  if (!t.ok()) return t.status();

  if (t->state == TransformState::kWaitingToBackfill) {
    auto total = conn.Query("SELECT " + TotalRowsSql(t.value()));
    if (!total.ok()) return total.status();
    const long total_rows = std::stol(total->text(0, 0));
    TRELLIS_RETURN_IF_ERROR(catalog::StartBuild(conn, schema, t->id, total_rows));
    if (!t->key_indexed) {
      // A first build: plan its ranges; every drain worker appends them.
      TRELLIS_RETURN_IF_ERROR(PlanFirstBuild(conn, schema, t.value(), total_rows, chunk_rows));
      TRELLIS_RETURN_IF_ERROR(tx.value()->Commit());
      return true;
    }
  } else if (!t->key_indexed) {
    // A first build whose ranges are all appended (none is running: this
    // holds the row) gets its key, and the transform catches up.
    auto left = conn.Query(
        sql::WithSchema("SELECT 1 FROM {schema}.build_ranges WHERE transform_id = $1::int LIMIT 1",
                        schema),
        {id});
    if (!left.ok()) return left.status();
    if (!left->empty()) {
      TRELLIS_RETURN_IF_ERROR(tx.value()->Commit());
      return true;  // ranges left to append: AppendOneRange takes them
    }
    auto keyed = QueryOrPauseOnSchemaChange(conn, schema, t.value(), AddKeySql(t.value()), {});
    if (!keyed.ok()) return keyed.status();
    if (keyed.value()) TRELLIS_RETURN_IF_ERROR(catalog::FinishBuild(conn, schema, t->id));
    TRELLIS_RETURN_IF_ERROR(tx.value()->Commit());
    return true;
  }

  std::optional<std::string> lo;
  if (t->backfill_cursor) lo = sql::ArrayLiteral(*t->backfill_cursor);
  auto hi_rows = conn.Query(NextCursorSql(t.value()), {lo, std::to_string(chunk_rows)});
  if (!hi_rows.ok()) return hi_rows.status();
  std::optional<std::string> hi;
  if (!hi_rows->empty()) hi = hi_rows->at(0, 0);

  // A rebuild: recompute the next range in place.
  // The bitmap scan the planner picks for a fifth of a table costs more than
  // an ordered index scan (first_build.cc).
  TRELLIS_RETURN_IF_ERROR(conn.Exec("SET LOCAL enable_bitmapscan = off"));
  auto applied = QueryOrPauseOnSchemaChange(
      conn, schema, t.value(), ApplyRangeSql(t.value(), t->backfill_columns), {lo, hi});
  if (!applied.ok()) return applied.status();
  if (!applied.value()) {  // paused; RESUME rebuilds from the start
    TRELLIS_RETURN_IF_ERROR(tx.value()->Commit());
    return true;
  }
  // Counted before the commit: a chunk that fails to commit is redone, and
  // its rows counted again (the counter measures work, not distinct rows).
  const long written =
      std::stol(applied.value()->text(0, 0)) + std::stol(applied.value()->text(0, 1));
  GlobalEngineMetrics().backfill_rows.fetch_add(static_cast<uint64_t>(written),
                                                std::memory_order_relaxed);
  if (hi) {
    TRELLIS_RETURN_IF_ERROR(catalog::RecordBuildProgress(conn, schema, t->id, *hi, chunk_rows));
  } else {
    TRELLIS_RETURN_IF_ERROR(catalog::FinishBuild(conn, schema, t->id));
  }
  TRELLIS_RETURN_IF_ERROR(tx.value()->Commit());
  return true;
}

}  // namespace trellis::drain
