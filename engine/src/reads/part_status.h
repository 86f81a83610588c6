// status/2 of a grouped join (spec/engine.md "Grouping a join"): the user's
// group transform and its hidden join part read as one transform.
#pragma once

#include <string>

#include "trellis/types.h"

namespace trellis::reads {

// The state of the pair, by wire name: backfilling while its one build is
// under way (`building`: the group waits for a join whose build began after
// the group's was asked for, catalog::StageBuildsForOwnerSql), else the worse
// of the two (paused, backfilling, waiting_to_backfill, catching_up, live, in
// that order). So a rebuild of the pair reads waiting_to_backfill ->
// backfilling (the join's half, then the group's) -> catching_up -> live,
// never waiting again between its halves. What definitions/1 shows too.
std::string PairState(const std::string& group, const std::string& join, bool building);

// Folds the hidden join part's status `join` (its target `join_target`,
// schema.name as status shows tables) into the group's `group`: PairState,
// with the join's pause when it is the join's, and while the join's half of
// the build shows, its progress (rows of the join; unfinished until the
// group's half ends) with the group's columns being rebuilt; backlogs and
// held keys added, the failures of either, the join's index gaps and
// corrections, and nothing that names the hidden target.
void FoldJoinPart(TransformStatus& group, TransformStatus join, const std::string& join_target,
                  bool building);

}  // namespace trellis::reads
