#include "drain/build_job.h"

#include "catalog/jobs.h"
#include "catalog/model.h"
#include "catalog/states.h"
#include "drain/range_unit.h"
#include "plan/bind.h"
#include "sql/quote.h"
#include "sql/row_reader.h"
#include "workers/locks.h"

namespace trellis::drain {
namespace {

// A claimable job: not waiting for a retry after a failure, so a failing
// range holds up no other.
constexpr std::string_view kClaimable = "(j.retry_at IS NULL OR j.retry_at <= now())";

}  // namespace

Result<std::optional<long>> RunOneBuildJob(pg::Connection& conn, const std::string& schema,
                                           UnitExecutor& executor) {
  const std::string kinds = catalog::BuildJobKindsSql();
  auto tx = pg::Transaction::Begin(conn);
  if (!tx.ok()) return tx.status();
  // The transform first, unlocked: a rebuild's range takes the transform's
  // drain lock exclusively, and must take it before any row lock (a drain
  // holding it shared may be about to update the transform's row).
  auto candidate = conn.Query(catalog::StateSql(R"sql(
SELECT t.id, t.key_indexed FROM {schema}.transforms t
WHERE t.status = {state:backfilling}
  AND EXISTS (SELECT 1 FROM {schema}.jobs j
              WHERE j.transform_id = t.id AND j.kind IN )sql" +
                                                    kinds + " AND " + std::string(kClaimable) +
                                                    R"sql()
ORDER BY t.id LIMIT 1)sql",
                                                schema));
  if (!candidate.ok()) return candidate.status();
  if (candidate->empty()) {
    TRELLIS_RETURN_IF_ERROR(tx.value()->Commit());
    return std::optional<long>();
  }
  sql::RowReader picked(candidate.value(), 0);
  const int transform_id = picked.Int(0);
  const bool in_place = picked.Bool(1);
  if (!picked.status().ok()) return picked.status();
  const std::string id = std::to_string(transform_id);
  if (in_place) {
    TRELLIS_RETURN_IF_ERROR(
        conn.Exec("SELECT pg_advisory_xact_lock(" + workers::TransformLockSpace() + ", $2::int)",
                  {schema, id}));
  }
  // Then the transform's row, shared: ranges of one build run side by side,
  // while a rebuild request, a pause or the build's last step (which lock
  // the row for update) wait until every running range has committed.
  // Always this order, row then job, so no two of them can deadlock.
  auto owned = conn.Query(
      catalog::StateSql("SELECT 1 FROM {schema}.transforms WHERE id = $1::int AND status = "
                        "{state:backfilling} FOR SHARE SKIP LOCKED",
                        schema),
      {id});
  if (!owned.ok()) return owned.status();
  auto job_row = conn.Query(sql::WithSchema(R"sql(
SELECT j.id, j.kind, j.lo, j.hi, j.columns, j.attempts FROM {schema}.jobs j
WHERE j.transform_id = $1::int AND j.kind IN )sql" +
                                                kinds + " AND " + std::string(kClaimable) + R"sql(
ORDER BY j.id LIMIT 1 FOR UPDATE SKIP LOCKED)sql",
                                            schema),
                            {id});
  if (!job_row.ok()) return job_row.status();
  if (owned->empty() || job_row->empty()) {
    TRELLIS_RETURN_IF_ERROR(tx.value()->Commit());
    return std::optional<long>();
  }
  sql::RowReader row(job_row.value(), 0);
  catalog::RangeJob job;
  job.id = row.Text(0);
  const auto kind = catalog::JobKindFromName(row.Text(1));
  job.lo = row.OptionalText(2);
  job.hi = row.OptionalText(3);
  job.columns = row.OptionalTextArray(4);
  job.attempts = row.Int(5);
  if (!row.status().ok()) return row.status();
  if (!kind) return Status::Internal("the jobs table holds an unknown build job kind");
  job.kind = *kind;

  auto t = catalog::LoadTransformById(conn, schema, transform_id);
  if (!t.ok()) return t.status();
  auto plan = plan::Bind(t.value(), schema);
  if (!plan.ok()) return plan.status();
  // A key range of a table loaded in key order reads fastest as an ordered
  // index scan; the bitmap scan the planner picks for a fifth of a table
  // builds its bitmap first, and cost an append ~15% more.
  TRELLIS_RETURN_IF_ERROR(conn.Exec("SET LOCAL enable_bitmapscan = off"));
  // A range that failed before settles its drain failure when it writes; so
  // does any range of a build that replaced a failed one (a rebuild asked for
  // again while the last one failed: its new ranges have no attempts yet).
  const bool retrying = true;
  RangeUnit unit(*plan.value(), schema, std::move(job));
  // Pausing updates the transform's row, which other ranges hold shared and
  // may be about to update too: it happens in a transaction of its own.
  auto ran = executor.Run(conn, schema, t.value(), unit,
                          RunOptions{.retrying = retrying, .pause_alone = true});
  if (!ran.ok()) return ran.status();
  if (ran->outcome == UnitOutcome::kPauseAlone) {
    tx.value().reset();
    TRELLIS_RETURN_IF_ERROR(executor.PauseAlone(conn, schema, t.value(), ran->error));
    return std::optional<long>(0);  // the range stays for after RESUME
  }
  TRELLIS_RETURN_IF_ERROR(tx.value()->Commit());
  return std::optional<long>(ran->rows);
}

}  // namespace trellis::drain
