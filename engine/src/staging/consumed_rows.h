// The capture rows as staging's readers see them (the `consumed` relation
// that plan::TransformPlan::DirtyKeySql and DeltaRowsSql read).
#pragma once

#include <string>

namespace trellis::staging {

// The select list of `consumed` over capture rows aliased `alias`: id
// (ctid), source_id, op, xid, routing, and per capture row its width and
// version count (capture/routing.h) and `member`, whether its relation is
// still under its source (capture/relations.h). `member` costs a walk of
// the captured relations per statement, so without `deltas` (no transform
// takes deltas, none reads it) it is NULL.
std::string ConsumedColumnsSql(const std::string& schema, const std::string& alias, bool deltas);

}  // namespace trellis::staging
