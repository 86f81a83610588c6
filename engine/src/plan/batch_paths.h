// The ways a plan can bring a claimed batch of ledger pages into its target
// (spec/engine.md "Batch paths"): apply the pages' delta rows, recompute the
// pages' units, or rebuild the whole target. Every kind offers recompute
// and rebuild; a kind whose changes travel as delta rows offers deltas too.
// The drain's chooser (drain/path_chooser.h) picks one per batch; the plan
// only says what each one runs. Pure text, like the rest of plan/.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "plan/transform_plan.h"

namespace trellis::plan {

enum class BatchPath { kDelta, kRecompute, kRebuild };

// "delta", "recompute", "rebuild": as the catalog (batch_paths.path),
// status and the metrics name them.
std::string_view BatchPathName(BatchPath path);
std::optional<BatchPath> BatchPathFromName(std::string_view name);

// Whether the plan can apply the batch by its delta rows now (a GROUP BY
// whose changes are staged as delta rows: MaintainPlan::DeltaRowsSql).
bool OffersDeltas(const TransformPlan& plan);

// The statements that drain pages $1 (bigint[]) by `path`, run in order in
// one transaction: for kDelta the plan's delta statements (with the
// recompute of the pages' units that carry no delta row), for kRecompute
// the recompute of every unit the pages list.
// REQUIRES: path is not kRebuild; kDelta only when OffersDeltas(plan).
std::vector<PagesStatement> PagesSql(const TransformPlan& plan, BatchPath path);

// The rebuild of the whole target in one statement that keeps the table
// (its OID, grants, indexes, and the views and foreign keys built on it):
// the definition is computed once, and only the difference is written
// (rows whose key is gone deleted, changed rows updated, new rows
// inserted), so readers keep reading the committed target under MVCC and
// never see a half-built one. It is the build's recompute of the unbounded
// key range (BuildPlan::RecomputeRange), which also records its snapshot
// for a group plan, so the delta rows of writers it saw are never applied
// again (spec/engine.md "Deltas"). Returns (written, deleted).
Bound RebuildTargetSql(const TransformPlan& plan);

// A scalar subquery: the target's estimated rows, from the planner's
// statistics when the target has been analysed with rows in it (scaled to
// its size now), else from the statistics' live rows or its size; NULL
// when the target is gone. The target's rows are the size a rebuild works
// through. Free: nothing is counted.
std::string TargetRowsSql(const TransformPlan& plan);

}  // namespace trellis::plan
