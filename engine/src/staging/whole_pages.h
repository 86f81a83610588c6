// Bulk writes staged whole (spec/engine.md "Batch paths", "Bulk writes"):
// when a staging batch holds more captured row versions for a transform
// than paging them key by key is worth, measured against a rebuild of the
// whole target (plan/path_model.h), staging writes one whole page for the
// transform instead of its keys and delta rows, and the drain drains that
// page by a rebuild (drain/path_chooser.h). A bulk UPDATE of a large table
// then costs a rebuild, not a staging statement per row version and a
// rebuild after it.
#pragma once

#include <string>
#include <vector>

#include "catalog/model.h"
#include "plan/transform_plan.h"

namespace trellis::staging {

// One transform that may be staged whole in a batch.
struct WholeCandidate {
  const catalog::Transform* transform;
  const plan::TransformPlan* plan;
  // A condition over nothing that must hold for its keys to be staged at
  // all (stage_batch.cc: not waiting for its first build).
  std::string gate;
};

// The body of the staging statement's CTE `whole` (after `consumed`): one
// row (transform_id, versions) per candidate whose share of the batch is
// better rebuilt: its row versions in `consumed`, of the sources it reads,
// at least `floor` and costing more staged
// (plan::kStageUsPerVersion each) than a rebuild is estimated at, and not
// waiting for its first build (`first_build_gate(id)`: a condition true
// unless it does). The estimate is read only past the floor.
std::string WholeTransformsSql(const std::string& schema,
                               const std::vector<WholeCandidate>& candidates, long floor);

// A condition over nothing: transform `id` is not in `whole`, so its keys
// are staged.
std::string NotWholeSql(int id);

// The body of CTE `whole_paged`: one whole page per row of `whole`
// (no keys, no buckets; its key_count the row versions it stands for).
std::string WholePagesSql(const std::string& schema);

}  // namespace trellis::staging
