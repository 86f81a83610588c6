#include "drain/backfill_chunk.h"

#include "catalog/model.h"
#include "catalog/states.h"
#include "drain/first_build.h"
#include "drain/range_unit.h"
#include "drain/statement_unit.h"
#include "plan/bind.h"
#include "sql/quote.h"
#include "trellis/engine_metrics.h"
#include "workers/locks.h"

namespace trellis::drain {

Result<bool> BackfillOneChunk(pg::Connection& conn, const std::string& schema, long chunk_rows,
                              UnitExecutor& executor) {
  auto tx = pg::Transaction::Begin(conn);
  if (!tx.ok()) return tx.status();
  auto next = conn.Query(sql::WithSchema(R"sql(
SELECT t.id FROM {schema}.transforms t
WHERE t.status IN ('waiting_to_backfill', 'backfilling') AND NOT )sql" +
                                             BuildRetryPending(schema) + R"sql(
  -- A first build with ranges left is the appends' work (first_build.h).
  AND NOT (t.status = 'backfilling' AND NOT t.key_indexed
           AND EXISTS (SELECT 1 FROM {schema}.jobs j
                       WHERE j.transform_id = t.id AND j.kind = 'build_range'))
ORDER BY t.id LIMIT 1)sql",
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
  auto bound = plan::Bind(t.value(), schema);
  if (!bound.ok()) return bound.status();
  const plan::TransformPlan& plan = *bound.value();

  if (t->state == TransformState::kWaitingToBackfill) {
    auto total = conn.Query(plan.EstimateKeysSql());
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
        sql::WithSchema("SELECT 1 FROM {schema}.jobs WHERE transform_id = $1::int AND kind = "
                        "'build_range' LIMIT 1",
                        schema),
        {id});
    if (!left.ok()) return left.status();
    if (!left->empty()) {
      TRELLIS_RETURN_IF_ERROR(tx.value()->Commit());
      return true;  // ranges left to append: AppendOneRange takes them
    }
    StatementUnit add_key("add_key", plan.AddKeySql());
    auto keyed = executor.Run(conn, schema, t.value(), add_key, RunOptions{.retrying = true});
    if (!keyed.ok()) return keyed.status();
    if (keyed->outcome == UnitOutcome::kApplied) {
      TRELLIS_RETURN_IF_ERROR(catalog::FinishBuild(conn, schema, t->id));
    }
    TRELLIS_RETURN_IF_ERROR(tx.value()->Commit());
    return true;
  }

  std::optional<std::string> lo;
  if (t->backfill_cursor) lo = sql::ArrayLiteral(*t->backfill_cursor);
  const plan::Bound after = plan.KeyAfter(lo, chunk_rows);
  auto hi_rows = conn.Query(after.text, after.params);
  if (!hi_rows.ok()) return hi_rows.status();
  std::optional<std::string> hi;
  if (!hi_rows->empty()) hi = hi_rows->at(0, 0);

  // A rebuild: recompute the next range in place.
  // The bitmap scan the planner picks for a fifth of a table costs more than
  // an ordered index scan (first_build.cc).
  TRELLIS_RETURN_IF_ERROR(conn.Exec("SET LOCAL enable_bitmapscan = off"));
  auto chunk = RangeUnit::RebuildChunk(plan, plan::KeyRange{lo, hi}, t->backfill_columns);
  auto applied = executor.Run(conn, schema, t.value(), *chunk, RunOptions{.retrying = true});
  if (!applied.ok()) return applied.status();
  switch (applied->outcome) {
    case UnitOutcome::kApplied:
      break;
    case UnitOutcome::kPaused:   // RESUME rebuilds from the start
    case UnitOutcome::kCharged:  // the cursor stays: redone after the backoff
      TRELLIS_RETURN_IF_ERROR(tx.value()->Commit());
      return true;
    case UnitOutcome::kPauseAlone:
      tx.value().reset();
      TRELLIS_RETURN_IF_ERROR(executor.PauseAlone(conn, schema, t.value(), applied->error));
      return true;
  }
  // Counted before the commit: a chunk that fails to commit is redone, and
  // its rows counted again (the counter measures work, not distinct rows).
  const long written = applied->rows;
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
