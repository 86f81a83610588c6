#include "drain/build_step.h"

#include <algorithm>
#include <cmath>

#include "catalog/chains.h"
#include "catalog/jobs.h"
#include "catalog/model.h"
#include "catalog/states.h"
#include "drain/statement_unit.h"
#include "pg/sqlstate.h"
#include "plan/bind.h"
#include "sql/quote.h"
#include "sql/row_reader.h"

namespace trellis::drain {
namespace {

// How long the build's last step waits for its target's lock and the
// transforms table's (AdvanceBuild).
constexpr const char* kKeyLockTimeout = "200ms";

// Enough sampled rows per range for even ranges, and at least this many in
// all, so that the pages sampled are spread over the whole input.
constexpr double kSampleRowsPerRange = 100;
constexpr double kMinSampleRows = 10000;

// Cuts the plan's input into ranges of about `range_rows` rows (from a
// sample of its pages) and records them as jobs of `build`.
Status PlanBuild(pg::Connection& conn, const std::string& schema, const plan::TransformPlan& plan,
                 const catalog::PendingBuild& build, long estimated_rows, long range_rows) {
  const long ranges =
      plan.Ranges() ? std::max(1L, (estimated_rows + range_rows - 1) / range_rows) : 1;
  std::vector<std::optional<std::string>> boundaries;
  if (ranges > 1) {
    const double wanted = std::max(kMinSampleRows, kSampleRowsPerRange * ranges);
    const double percent = std::min(100.0, 100.0 * wanted / static_cast<double>(estimated_rows));
    const double expected = percent / 100.0 * static_cast<double>(estimated_rows);
    const long per_boundary = std::max(1L, std::lround(expected / static_cast<double>(ranges)));
    const plan::Bound sample = plan.SampleBoundaries(percent, per_boundary, ranges - 1);
    auto sampled = conn.Query(sample.text, sample.params);
    if (!sampled.ok()) return sampled.status();
    for (size_t r = 0; r < sampled->size(); ++r) boundaries.push_back(sampled->at(r, 0));
  }
  return catalog::PlanRanges(conn, schema, plan.transform_id(), build, boundaries, estimated_rows);
}

// Whether transform row `t` has a step for AdvanceBuild: a build waiting to
// start (its upstream live), or one with no ranges left, which this step
// ends. A build with ranges left is the range runners' work (build_job.h);
// the pick's row lock skips a transform whose ranges are running (they hold
// it shared).
std::string ReadyToAdvanceSql(const std::string& schema) {
  return catalog::StateSql(R"sql((t.status = {state:waiting_to_backfill}
       OR (t.status = {state:backfilling}
           AND NOT EXISTS (SELECT 1 FROM {schema}.jobs j
                           WHERE j.transform_id = t.id AND j.kind IN )sql" +
                               catalog::BuildJobKindsSql() + R"sql()))
  AND NOT )sql" + BuildRetryPending(schema) +
                               R"sql(
  -- A transform over another's target starts building once that one is live.
  AND NOT (t.status = {state:waiting_to_backfill} AND )sql" +
                               catalog::UpstreamNotLiveSql(schema, "t.id") + ")",
                           schema);
}

}  // namespace

Result<bool> AnyBuild(pg::Connection& conn, const std::string& schema) {
  auto any = conn.Query(
      catalog::StateSql("SELECT EXISTS (SELECT 1 FROM {schema}.transforms "
                        "WHERE status IN ({state:waiting_to_backfill}, {state:backfilling}))",
                        schema));
  if (!any.ok()) return any.status();
  return any->text(0, 0) == "t";
}

Result<bool> AdvanceBuild(pg::Connection& conn, const std::string& schema, long range_rows,
                          UnitExecutor& executor) {
  auto tx = pg::Transaction::Begin(conn);
  if (!tx.ok()) return tx.status();
  const std::string ready = ReadyToAdvanceSql(schema);
  auto next =
      conn.Query(catalog::StateSql("SELECT t.id FROM {schema}.transforms t WHERE ", schema) +
                 ready + " ORDER BY t.id LIMIT 1 FOR UPDATE OF t SKIP LOCKED");
  if (!next.ok()) return next.status();
  if (next->empty()) {
    TRELLIS_RETURN_IF_ERROR(tx.value()->Commit());
    return false;
  }
  // Asked again now that the row is locked, in a statement of its own. The
  // pick's row lock may have waited for a transaction that changed the row
  // (a concurrent step that started this build and planned its ranges):
  // PostgreSQL then re-tests the row's own conditions on its new version but
  // answers the subqueries from the old snapshot, in which the new ranges do
  // not exist, and the build would be finished with every range still to
  // run (seen: a target left empty and live). A fresh snapshot sees them.
  auto still = conn.Query(catalog::StateSql("SELECT EXISTS (SELECT 1 FROM {schema}.transforms t "
                                            "WHERE t.id = $1::bigint AND ",
                                            schema) +
                              ready + ")",
                          {next->text(0, 0)});
  if (!still.ok()) return still.status();
  if (still->text(0, 0) != "t") {
    TRELLIS_RETURN_IF_ERROR(tx.value()->Commit());
    return true;
  }
  auto id = sql::ScalarInt64(next.value());
  if (!id.ok()) return id.status();
  auto t = catalog::LoadTransformById(conn, schema, static_cast<int>(id.value()));
  if (!t.ok()) return t.status();
  auto bound = plan::Bind(t.value(), schema);
  if (!bound.ok()) return bound.status();
  const plan::TransformPlan& plan = *bound.value();

  if (t->state == TransformState::kWaitingToBackfill) {
    auto total = conn.Query(plan.EstimateKeysSql());
    if (!total.ok()) return total.status();
    auto total_rows = sql::ScalarInt64(total.value());
    if (!total_rows.ok()) return total_rows.status();
    auto build = catalog::PendingBuildOf(conn, schema, t->id, t->key_indexed);
    if (!build.ok()) return build.status();
    TRELLIS_RETURN_IF_ERROR(catalog::StartBuild(conn, schema, t->id, total_rows.value()));
    TRELLIS_RETURN_IF_ERROR(PlanBuild(conn, schema, plan, build.value(),
                                      static_cast<long>(total_rows.value()), range_rows));
    TRELLIS_RETURN_IF_ERROR(tx.value()->Commit());
    return true;
  }
  // Every range is in (none is running: this holds the row). A first build
  // makes its key; then the transform catches up.
  if (!t->key_indexed) {
    // The key takes the target's ACCESS EXCLUSIVE lock while this holds the
    // transform's row: it may wait for the target's readers (a staging
    // batch reading it for the transform over it, which waits in turn for
    // this row to insert its pages: a deadlock) only briefly. So may the
    // lock on the transforms table that FinishBuild's update needs, taken
    // first: a define or drop holds the table (SHARE ROW EXCLUSIVE) until
    // it commits, and waiting for it with the target locked would hold up
    // the target's readers meanwhile. A lock not granted in time is the
    // step's retry: rolled back (the row free) and tried again, no failed
    // step and no backoff. The bound holds for those two statements only
    // (StatementUnit): what follows waits as any statement does, since a
    // bound left in force would fail it as a broken step (FinishBuild's
    // update, behind a define, failed so 152 times in one run of the
    // compiled transforms' tests, each a reconnect of the drain worker).
    StatementUnit add_key(
        "add_key", plan.AddKeySql(),
        LockWait{
            kKeyLockTimeout,
            sql::WithSchema("LOCK TABLE {schema}.transforms IN ROW EXCLUSIVE MODE; ", schema)});
    auto keyed = executor.Run(conn, schema, t.value(), add_key, RunOptions{.retrying = true});
    if (!keyed.ok() && pg::HasSqlState(keyed.status(), pg::kLockNotAvailable)) {
      // The target or the table is busy: the transaction rolls back as it
      // goes (the row free), and the step is tried again: no failed step,
      // no backoff.
      return true;
    }
    if (!keyed.ok()) return keyed.status();
    if (keyed->outcome != UnitOutcome::kApplied) {
      TRELLIS_RETURN_IF_ERROR(tx.value()->Commit());
      return true;
    }
  }
  TRELLIS_RETURN_IF_ERROR(catalog::FinishBuild(conn, schema, t->id));
  TRELLIS_RETURN_IF_ERROR(tx.value()->Commit());
  // The planner's statistics of the target, made now: until autovacuum got
  // to a target just built, a recompute of one unit could be planned as a
  // read of the whole target and its whole join (28.8 s for one customer of
  // a fan-out join in bench/README.md, "Joins of every shape"). ANALYZE
  // reads a sample and blocks no reader or writer.
  TRELLIS_RETURN_IF_ERROR(conn.Exec("ANALYZE " + plan.target()));
  return true;
}

}  // namespace trellis::drain
