// The cost model of the batch paths (spec/engine.md "Batch paths"): how
// much work, in microseconds, each way of bringing a batch of captured
// changes into a target is modelled to take. The drain's chooser
// (drain/path_chooser.h) compares the paths of a claimed batch with it;
// staging asks it whether a bulk write is cheaper rebuilt than paged key by
// key (staging/whole_pages.h). Each path's figure is then multiplied by
// what that path has cost the transform before (batch_paths.factor).
#pragma once

#include <string>

#include "catalog/model.h"
#include "plan/transform_plan.h"

namespace trellis::plan {

// From the measurements (1M rows, 10k groups): a REFRESH of the
// GROUP BY takes about 0.2 us per source row, its delta statement about 7
// us per delta row and key; a join of 1M rows rebuilds in about 1 us per
// row and recomputes about 22 us per key. A batch's statements cost a few
// milliseconds whatever their size.
inline constexpr double kBatchOverheadUs = 3000;
inline constexpr double kDeltaUsPerRow = 5;
inline constexpr double kRecomputeUsPerKey = 25;
inline constexpr double kRebuildUsPerTargetRow = 1;
inline constexpr double kRebuildUsPerInputRow = 0.3;
// Staging one captured row version into page keys and delta rows, and
// draining it by its pages (path_bench, 200k orders: the staging statement
// took 15.4 s for the 400k versions of an UPDATE of every order, 1.3 s for
// 40k, 0.15 s for 4k).
inline constexpr double kStageUsPerVersion = 30;
// Below this many row versions in one staging batch, a bulk write is never
// staged whole: the estimate is not even read (staging::StageBatch's
// default floor).
inline constexpr long kWholeFloorVersions = 1000;
// A measured factor loses half its weight against the model per this long
// without a batch by its path.
inline constexpr double kFactorHalfLifeSeconds = 3600;
// A failed rebuild keeps the chooser off rebuilds of the transform this long.
inline constexpr int kRebuildFailureBackoffSeconds = 600;

// A scalar subquery (bigint): the rows of `t`'s input tables, the
// planner's estimate or the statistics' live rows, whichever says more. No
// table is named (to_regclass): one dropped under the engine counts as
// empty here and fails where it is read.
std::string InputRowsSql(const catalog::Transform& t);

// A float8 SQL expression: the estimate of rebuilding `plan`'s target now,
// as the chooser makes it (drain/path_chooser.h): kBatchOverheadUs times
// the rebuild's fixed factor, plus per target row and per input row times
// its growing factor (each decayed as the chooser decays it), or NULL when a rebuild failed within
// the backoff (no rebuild is to be planned then). `schema`: the catalog's.
std::string RebuildEstimateUsSql(const TransformPlan& plan, const catalog::Transform& t,
                                 const std::string& schema);

}  // namespace trellis::plan
