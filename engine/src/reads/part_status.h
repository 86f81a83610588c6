// status/2 of a grouped join (spec/engine.md "Grouping a join"): the user's
// group transform and its hidden join part read as one transform.
#pragma once

#include <string>

#include "trellis/types.h"

namespace trellis::reads {

// Folds the hidden join part's status `join` (its target `join_target`,
// schema.name as status shows tables) into the group's `group`: the worse
// state of the two (paused, backfilling, waiting_to_backfill, catching_up,
// live, in that order) with that part's pause and build progress, backlogs
// and held keys added, the failures of either, the join's index gaps and
// corrections, and nothing that names the hidden target.
void FoldJoinPart(TransformStatus& group, TransformStatus join, const std::string& join_target);

// The worse of two states by wire name, in FoldJoinPart's order (what
// definitions/1 shows for the pair).
std::string WorseState(const std::string& a, const std::string& b);

}  // namespace trellis::reads
