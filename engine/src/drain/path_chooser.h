// The one chooser of a claimed batch's path (spec/engine.md "Batch paths"):
// apply the pages' delta rows, recompute their units, or rebuild the whole
// target, whichever is estimated cheapest from the batch's size, the
// target's and what the transform's earlier batches actually cost by each
// path (catalog table batch_paths, a decaying average). The drain asks it
// for the batch's unit (ChooseBatch), runs the unit through the executor,
// then records what the batch cost (RecordBatch), in the same transaction.
//
// The model, in microseconds of modelled work per path
// (plan/path_model.h), is two figures: the fixed cost of a batch's
// statements, kBatchOverheadUs, and the work that grows with the batch:
//   delta      kDeltaUsPerRow x (delta rows + keys) of the batch
//   recompute  kRecomputeUsPerKey x keys of the batch
//   rebuild    kRebuildUsPerTargetRow x the target's rows
//              + kRebuildUsPerInputRow x the input tables' rows (the
//              planner's estimates: a GROUP BY reads many source rows
//              per target row, a projection one)
// A claim takes at most kKeysPerClaim keys, while a rebuild completes the
// transform's whole backlog: delta and recompute are scaled to the backlog
// (x backlog keys / batch keys) before they are compared. Each figure is
// multiplied by its own measured factor for the path: a batch whose
// growing part is modelled below the fixed cost teaches the fixed factor
// (what is left of its time after the growing part), a larger one the
// growing factor (what is left after the fixed cost). One factor for both
// let a 20-key batch that took 40 ms on a loaded machine (its statements'
// first plans, not its rows) price every later delta batch 14 times its
// model, and a 0.1% UPDATE went by a rebuild three times slower
// (bench/README.md "Batch paths"). Each factor is the average of the
// transform's batches that taught it, each new batch weighing half, and
// decays back to 1 (the model alone) with a half-life of an hour without
// batches by that path.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "catalog/model.h"
#include "drain/unit.h"
#include "drain/unit_executor.h"
#include "pg/connection.h"
#include "plan/batch_paths.h"
#include "plan/path_model.h"
#include "plan/transform_plan.h"
#include "trellis/status.h"

namespace trellis::drain {

// What a path cost the transform before, as the catalog keeps it.
struct PathHistory {
  bool measured = false;  // the growing factor was
  double factor = 1;      // the growing part: measured time / modelled work
  double age_seconds = 0;
  bool failed_recently = false;  // rebuild: one failed within the backoff
  bool fixed_measured = false;
  double fixed_factor = 1;  // the fixed cost: measured / kBatchOverheadUs
};

// What one claimed batch is chosen from.
struct BatchFacts {
  long keys = 0;          // the claimed pages' keys
  long delta_rows = 0;    // their delta rows
  long backlog_keys = 0;  // keys in every page of the transform (the claimed ones too)
  long target_rows = 0;   // the target's estimated rows
  long input_rows = 0;    // its input tables' rows, as the planner last estimated them
  bool offers_deltas = false;
  // A claimed page is whole (staging/whole_pages.h): it lists no keys, and
  // only a rebuild drains it.
  bool whole = false;
  PathHistory delta, recompute, rebuild;
  // The path of the transform's last batch, if any.
  std::optional<plan::BatchPath> previous;
};

struct PathChoice {
  plan::BatchPath path = plan::BatchPath::kRecompute;
  // The estimates compared, for the log and status: e.g.
  // "rebuild 20.0 ms < recompute 250.0 ms (2000 of 2000 backlog keys, 10000 target rows)".
  std::string reason;
};

// The path for a batch. Pure. A GROUP BY whose changes travel as delta
// rows is offered delta or rebuild: its recompute of a unit reads every
// source row of the group, which no figure of the batch measures (a hot
// group's recompute can cost more than all its deltas), and the delta
// statement recomputes the units that carry no delta row anyway. Other
// kinds are offered recompute or rebuild. A batch holding a whole page is
// rebuilt.
PathChoice ChoosePath(const BatchFacts& facts);

// The modelled work of `path` for `facts`' batch that grows with it
// (microseconds, before the measured factor; the fixed cost is
// kBatchOverheadUs): delta and recompute for the claimed batch, a rebuild
// for the whole target.
double GrowingUs(plan::BatchPath path, const BatchFacts& facts);

// The estimate of `path` for `facts`' batch: each figure of the model times
// its measured factor (not scaled to the backlog).
double EstimatedUs(plan::BatchPath path, const BatchFacts& facts);

// A chosen batch: its unit, and what RecordBatch needs.
struct ChosenBatch {
  PathChoice choice;
  BatchFacts facts;
  std::unique_ptr<Unit> unit;  // null when busy
  std::chrono::steady_clock::time_point started;
  // A rebuild was chosen and another drain of the transform holds it: the
  // caller leaves the pages for later (rolls back), like a busy bucket.
  bool busy = false;
};

// Reads the facts of the batch of pages `page_ids` (a bigint[] literal,
// `keys` keys and `delta_rows` delta rows as the claim counted them;
// `whole`: one of them is a whole page) of
// `plan`'s transform `t` (the rows it was bound from), chooses its path
// and makes its unit. A rebuild also takes the transform's lock
// exclusively (a try-lock: the drain holds it shared, and another drain of
// the transform may too, whose writes the rebuild must not interleave
// with); when it cannot, the batch is `busy`. REQUIRES: inside the drain's
// transaction, after the claim.
Result<ChosenBatch> ChooseBatch(pg::Connection& conn, const std::string& schema,
                                const plan::TransformPlan& plan, const catalog::Transform& t,
                                const std::string& page_ids, long keys, long delta_rows,
                                bool whole);

// Records what the batch cost, for its path (a rebuild that failed and
// went by its pages is recorded as failed, and the time as the fallback's
// path), logs at info when the transform's path changed, and counts it in
// the engine's metrics. REQUIRES: in the drain's transaction, after the
// executor ran the unit.
Status RecordBatch(pg::Connection& conn, const std::string& schema, const plan::TransformPlan& plan,
                   const ChosenBatch& batch, const UnitResult& result);

}  // namespace trellis::drain
