#include "drain/path_chooser.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <cmath>

#include "catalog/address.h"
#include "drain/page_unit.h"
#include "drain/rebuild_unit.h"
#include "log/component_log.h"
#include "sql/quote.h"
#include "sql/row_reader.h"
#include "trellis/engine_metrics.h"
#include "workers/locks.h"

namespace trellis::drain {
namespace {

using plan::BatchPath;
using plan::kBatchOverheadUs;
using plan::kDeltaUsPerRow;
using plan::kFactorHalfLifeSeconds;
using plan::kRebuildFailureBackoffSeconds;
using plan::kRebuildUsPerInputRow;
using plan::kRebuildUsPerTargetRow;
using plan::kRecomputeUsPerKey;

// A measured factor, weighed against the model (1) by its age.
double Aged(bool measured, double factor, double age_seconds) {
  if (!measured) return 1;
  return 1 + (factor - 1) * std::exp2(-age_seconds / kFactorHalfLifeSeconds);
}
double GrowingFactor(const PathHistory& h) { return Aged(h.measured, h.factor, h.age_seconds); }
double FixedFactor(const PathHistory& h) {
  return Aged(h.fixed_measured, h.fixed_factor, h.age_seconds);
}

const PathHistory& HistoryOf(BatchPath path, const BatchFacts& facts) {
  switch (path) {
    case BatchPath::kDelta:
      return facts.delta;
    case BatchPath::kRecompute:
      return facts.recompute;
    case BatchPath::kRebuild:
      return facts.rebuild;
  }
  return facts.recompute;
}

// The rows a path's cost per row is per: the batch's keys, or for a
// rebuild the target's rows.
long RowsOf(BatchPath path, const BatchFacts& facts) {
  if (path == BatchPath::kRebuild) return std::max(facts.target_rows, facts.keys);
  return facts.keys;
}

std::string Ms(double us) { return fmt::format("{:.1f} ms", us / 1000); }

// The facts of the batch, one row per path (delta, recompute, rebuild):
// the transform's backlog keys, the target's rows, then the path's history
// (the growing part's factor measured, and in micro-units, the age in
// micro-seconds, failed recently), the path of the transform's last batch,
// the fixed cost's factor measured, and in micro-units, and the input tables' rows (the planner's
// or the statistics' live rows, whichever says more). No table is named
// (to_regclass): one dropped under the engine fails in the unit, which
// pauses the transform for it.
std::string FactsSql(const std::string& schema, const plan::TransformPlan& plan,
                     const catalog::Transform& t) {
  return sql::WithSchema(R"sql(
WITH backlog AS (
  SELECT coalesce(sum(key_count), 0)::bigint AS keys FROM {schema}.pages
  WHERE transform_id = $1::int
)
SELECT b.keys, )sql",
                         schema) +
         plan::TargetRowsSql(plan) +
         sql::WithSchema(R"sql(,
       v.path, coalesce(p.batches - p.fixed_batches, 0) > 0,
       round(coalesce(p.factor, 1) * 1000000)::bigint,
       round(coalesce(extract(epoch FROM clock_timestamp() - p.last_at), 0) * 1000000)::bigint,
       coalesce(p.failed_at > now() - make_interval(secs => $2::int), false),
       (SELECT l.path FROM {schema}.batch_paths l
        WHERE l.transform_id = $1::int AND l.batches > 0 ORDER BY l.last_at DESC LIMIT 1),
       coalesce(p.fixed_batches, 0) > 0, round(coalesce(p.fixed_factor, 1) * 1000000)::bigint,
       )sql",
                         schema) +
         plan::InputRowsSql(t) +
         sql::WithSchema(R"sql(
FROM backlog b CROSS JOIN (VALUES ('delta'), ('recompute'), ('rebuild')) AS v(path)
LEFT JOIN {schema}.batch_paths p ON p.transform_id = $1::int AND p.path = v.path)sql",
                         schema);
}

// One batch by `path` took `us`: the factor it teaches ($9: 'fixed' for
// the fixed cost's, else the growing part's) and its cost per row join the
// path's decaying averages, each new batch weighing as much as the history
// (less the history's age).
std::string RecordSql(const std::string& schema) {
  return sql::WithSchema(R"sql(
INSERT INTO {schema}.batch_paths AS p
  (transform_id, path, factor, fixed_factor, fixed_batches, us_per_row, batches, last_rows,
   last_ms, last_at, last_reason)
VALUES ($1::int, $2, CASE WHEN $9 = 'fixed' THEN 1 ELSE $3::float8 END,
        CASE WHEN $9 = 'fixed' THEN $3::float8 ELSE 1 END, CASE WHEN $9 = 'fixed' THEN 1 ELSE 0 END,
        $4::float8, 1, $5::bigint, $6::float8, clock_timestamp(), $7)
ON CONFLICT (transform_id, path) DO UPDATE SET
  factor = CASE WHEN $9 = 'fixed' THEN p.factor WHEN p.batches - p.fixed_batches = 0
    THEN EXCLUDED.factor ELSE
    (p.factor * pg_catalog.power(2, -extract(epoch FROM clock_timestamp() - p.last_at) / $8::float8)
     + EXCLUDED.factor)
    / (pg_catalog.power(2, -extract(epoch FROM clock_timestamp() - p.last_at) / $8::float8) + 1) END,
  fixed_factor = CASE WHEN $9 <> 'fixed' THEN p.fixed_factor WHEN p.fixed_batches = 0
    THEN EXCLUDED.fixed_factor ELSE
    (p.fixed_factor * pg_catalog.power(2, -extract(epoch FROM clock_timestamp() - p.last_at) / $8::float8)
     + EXCLUDED.fixed_factor)
    / (pg_catalog.power(2, -extract(epoch FROM clock_timestamp() - p.last_at) / $8::float8) + 1) END,
  fixed_batches = p.fixed_batches + EXCLUDED.fixed_batches,
  us_per_row = CASE WHEN p.batches = 0 THEN EXCLUDED.us_per_row ELSE
    (p.us_per_row * pg_catalog.power(2, -extract(epoch FROM clock_timestamp() - p.last_at) / $8::float8)
     + EXCLUDED.us_per_row)
    / (pg_catalog.power(2, -extract(epoch FROM clock_timestamp() - p.last_at) / $8::float8) + 1) END,
  batches = p.batches + 1, last_rows = EXCLUDED.last_rows, last_ms = EXCLUDED.last_ms,
  last_at = EXCLUDED.last_at, last_reason = EXCLUDED.last_reason)sql",
                         schema);
}

// A rebuild failed (its batch went by its pages): the chooser stays off
// rebuilds of the transform for a while. Its measured factor is kept.
std::string RecordFailureSql(const std::string& schema) {
  return sql::WithSchema(R"sql(
INSERT INTO {schema}.batch_paths AS p (transform_id, path, factor, us_per_row, failed_at)
VALUES ($1::int, 'rebuild', 1, 0, now())
ON CONFLICT (transform_id, path) DO UPDATE SET failed_at = now())sql",
                         schema);
}

std::atomic<uint64_t>& BatchCounter(BatchPath path) {
  auto& metrics = GlobalEngineMetrics();
  switch (path) {
    case BatchPath::kDelta:
      return metrics.batches_delta;
    case BatchPath::kRecompute:
      return metrics.batches_recompute;
    case BatchPath::kRebuild:
      return metrics.batches_rebuild;
  }
  return metrics.batches_recompute;
}

}  // namespace

double GrowingUs(BatchPath path, const BatchFacts& facts) {
  switch (path) {
    case BatchPath::kDelta:
      return kDeltaUsPerRow * static_cast<double>(facts.delta_rows + facts.keys);
    case BatchPath::kRecompute:
      return kRecomputeUsPerKey * static_cast<double>(facts.keys);
    case BatchPath::kRebuild:
      return kRebuildUsPerTargetRow * static_cast<double>(RowsOf(BatchPath::kRebuild, facts)) +
             kRebuildUsPerInputRow * static_cast<double>(facts.input_rows);
  }
  return 0;
}

double EstimatedUs(BatchPath path, const BatchFacts& facts) {
  const PathHistory& h = HistoryOf(path, facts);
  return kBatchOverheadUs * FixedFactor(h) + GrowingUs(path, facts) * GrowingFactor(h);
}

PathChoice ChoosePath(const BatchFacts& facts) {
  const BatchPath alternative = facts.offers_deltas ? BatchPath::kDelta : BatchPath::kRecompute;
  const double keys = static_cast<double>(std::max(facts.keys, 1L));
  // A rebuild completes the whole backlog; the other paths this batch.
  const double scale = static_cast<double>(std::max(facts.backlog_keys, facts.keys)) / keys;
  const double alternative_us = EstimatedUs(alternative, facts) * scale;
  const double rebuild_us = EstimatedUs(BatchPath::kRebuild, facts);
  const std::string sizes =
      fmt::format(" ({} of {} backlog keys, {} target rows, {} input rows)", facts.keys,
                  std::max(facts.backlog_keys, facts.keys), facts.target_rows, facts.input_rows);
  const std::string alternative_name(plan::BatchPathName(alternative));
  if (facts.whole) {
    return PathChoice{BatchPath::kRebuild,
                      "a bulk write staged whole, rebuild " + Ms(rebuild_us) + sizes};
  }
  if (facts.rebuild.failed_recently) {
    return PathChoice{alternative, "a rebuild failed in the last " +
                                       std::to_string(kRebuildFailureBackoffSeconds) + " s" +
                                       sizes};
  }
  if (rebuild_us < alternative_us) {
    return PathChoice{BatchPath::kRebuild, "rebuild " + Ms(rebuild_us) + " < " + alternative_name +
                                               " " + Ms(alternative_us) + sizes};
  }
  return PathChoice{alternative, alternative_name + " " + Ms(alternative_us) + " <= rebuild " +
                                     Ms(rebuild_us) + sizes};
}

Result<ChosenBatch> ChooseBatch(pg::Connection& conn, const std::string& schema,
                                const plan::TransformPlan& plan, const catalog::Transform& t,
                                const std::string& page_ids, long keys, long delta_rows,
                                bool whole) {
  const std::string tid = std::to_string(plan.transform_id());
  auto rows = conn.QueryPrepared(FactsSql(schema, plan, t),
                                 {tid, std::to_string(kRebuildFailureBackoffSeconds)});
  if (!rows.ok()) return rows.status();
  ChosenBatch batch;
  BatchFacts& facts = batch.facts;
  facts.keys = keys;
  facts.delta_rows = delta_rows;
  facts.whole = whole;
  facts.offers_deltas = plan::OffersDeltas(plan);
  for (size_t r = 0; r < rows->size(); ++r) {
    sql::RowReader row(rows.value(), r);
    facts.backlog_keys = row.Int64(0);
    facts.target_rows = row.OptionalInt64(1).value_or(0);
    const auto path = plan::BatchPathFromName(row.Text(2));
    PathHistory history{row.Bool(3),
                        static_cast<double>(row.Int64(4)) / 1e6,
                        static_cast<double>(row.Int64(5)) / 1e6,
                        row.Bool(6),
                        row.Bool(8),
                        static_cast<double>(row.Int64(9)) / 1e6};
    if (auto previous = row.OptionalText(7)) facts.previous = plan::BatchPathFromName(*previous);
    facts.input_rows = row.Int64(10);
    if (!row.status().ok()) return row.status();
    if (path == BatchPath::kDelta) facts.delta = history;
    if (path == BatchPath::kRecompute) facts.recompute = history;
    if (path == BatchPath::kRebuild) facts.rebuild = history;
  }
  batch.choice = ChoosePath(facts);
  const BatchPath pages_path = facts.offers_deltas ? BatchPath::kDelta : BatchPath::kRecompute;
  if (batch.choice.path == BatchPath::kRebuild) {
    auto locked = conn.Query(
        "SELECT pg_try_advisory_xact_lock(" + workers::TransformLockSpace() + ", $2::int)",
        {schema, tid});
    if (!locked.ok()) return locked.status();
    if (locked->text(0, 0) != "t") {
      // Another drain of the transform runs (two drains split a large
      // backlog between them): the batch waits for it rather than go by a
      // path estimated slower, and the next claim, alone, rebuilds.
      batch.busy = true;
      return batch;
    }
  }
  const std::vector<plan::PagesStatement> pages_sql = plan::PagesSql(plan, pages_path);
  if (batch.choice.path == BatchPath::kRebuild) {
    batch.unit = std::make_unique<RebuildUnit>(plan, schema, page_ids, pages_sql, whole);
  } else {
    batch.unit = std::make_unique<PagesUnit>(plan, schema, page_ids,
                                             plan::PagesSql(plan, batch.choice.path));
  }
  batch.started = std::chrono::steady_clock::now();
  return batch;
}

Status RecordBatch(pg::Connection& conn, const std::string& schema, const plan::TransformPlan& plan,
                   const ChosenBatch& batch, const UnitResult& result) {
  static const auto logger = log::Component("trellis::drain");
  const std::string tid = std::to_string(plan.transform_id());
  // A pause is no batch: nothing was applied.
  if (result.outcome == UnitOutcome::kPaused) return Status::OK();
  BatchPath taken = batch.choice.path;
  std::string reason = batch.choice.reason;
  if (taken == BatchPath::kRebuild && !static_cast<const RebuildUnit&>(*batch.unit).rebuilt()) {
    GlobalEngineMetrics().rebuild_fallbacks.fetch_add(1, std::memory_order_relaxed);
    // The rebuild's own error is the first the executor met; when every
    // key then applied alone, none is left to report.
    logger->info("transform {}: a rebuild failed, its batch went by its keys{}",
                 catalog::LogNameOf(conn, schema, plan.transform_id(), plan.name()).label,
                 result.error.ok() ? "" : ": " + log::SafeForLog(result.error));
    TRELLIS_RETURN_IF_ERROR(conn.Exec(RecordFailureSql(schema), {tid}));
    // The batch is recorded as its pages' path, its time with the failed
    // rebuild's (one batch's bias in that path's factor, which averages out).
    taken = plan::OffersDeltas(plan) ? BatchPath::kDelta : BatchPath::kRecompute;
    reason = batch.facts.whole
                 ? "a rebuild failed, the target is built again by ranges (" + reason + ")"
                 : "a rebuild failed, the batch went by its keys (" + reason + ")";
  }
  if (result.outcome != UnitOutcome::kApplied) return Status::OK();
  const double us = static_cast<double>(std::chrono::duration_cast<std::chrono::microseconds>(
                                            std::chrono::steady_clock::now() - batch.started)
                                            .count());
  const long rows = std::max(RowsOf(taken, batch.facts), 1L);
  // The figure the batch says most about learns from it: what is left of
  // its time once the other figure's current estimate is taken off, never
  // below a tenth of the model.
  const PathHistory& h = HistoryOf(taken, batch.facts);
  const double growing = std::max(GrowingUs(taken, batch.facts), 1.0);
  const bool teaches_fixed = growing < kBatchOverheadUs;
  const double factor =
      teaches_fixed
          ? std::max(us - growing * GrowingFactor(h), 0.1 * kBatchOverheadUs) / kBatchOverheadUs
          : std::max(us - kBatchOverheadUs * FixedFactor(h), 0.1 * growing) / growing;
  BatchCounter(taken).fetch_add(1, std::memory_order_relaxed);
  if (batch.facts.previous != taken) {
    logger->info("transform {}: batches go by {} now ({})",
                 catalog::LogNameOf(conn, schema, plan.transform_id(), plan.name()).label,
                 plan::BatchPathName(taken), reason);
  }
  // Prepared: every drain records its batch, and parsing this statement
  // cost more than running it (0.26 against 0.12 ms, server log).
  auto recorded = conn.QueryPrepared(
      RecordSql(schema),
      {tid, std::string(plan::BatchPathName(taken)), fmt::format("{}", factor),
       fmt::format("{}", us / static_cast<double>(rows)), std::to_string(rows),
       fmt::format("{}", us / 1000), reason, std::to_string(kFactorHalfLifeSeconds),
       teaches_fixed ? "fixed" : "growing"});
  return recorded.ok() ? Status::OK() : recorded.status();
}

}  // namespace trellis::drain
