// The rule of an aggregate kept by recompute of its group (string_agg,
// array_agg, bit_or, stddev, ...: grammar/recomputed_aggregate.h). It keeps
// no state: every group a change touches is read again from the source, as
// a min or max is when a change reaches its extreme (spec/engine.md
// "Aggregates kept by recompute"). Pure, like the rules in rules.h.
#pragma once

#include "plan/aggregates/rules.h"

namespace trellis::plan::aggregates {

// REQUIRES: input.call.function is kRecomputed. The visible column only,
// recomputed for every changed group: `name(inside)` over the group's rows,
// the inside as the user wrote it. In quarantine, the call skips the rows
// of the groups recorded for the column (FILTER), so that a failing
// argument is not evaluated for them again.
AggregateRule RecomputedCallRule(const AggregateInput& input);

}  // namespace trellis::plan::aggregates
