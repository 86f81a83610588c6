// The parts of a grouped join (spec/engine.md "Grouping a join"): the user's
// group transform and the hidden join transform it reads, whose target is in
// the catalog schema. A user sees one transform: statements address the
// group, act on both parts, and refuse to address the hidden one alone.
// The catalog records it (step 15): the hidden part's owner_id is the
// group's id (spec/engine.md "Stages"); catalog/composite.h loads a
// transform with its stages.
#pragma once

#include <string>
#include <string_view>

#include "catalog/model.h"
#include "pg/connection.h"
#include "trellis/status.h"

namespace trellis::catalog {

// True for a stage of another transform (the hidden join part of a grouped
// join): it has an owner.
bool IsHiddenPart(const Transform& t);

// Records transform `stage_id` as the first stage of `owner_id` (the
// owner's stage order becomes 2). The one writer of owner_id and
// stage_order after define.
Status RecordStage(pg::Connection& conn, const std::string& schema, int stage_id, int owner_id);

// SQL true when the transforms row `group` (an alias) waits to build and the
// row `join`, its hidden join part, began a build after the group's was
// asked for (its pending rebuild's job, or its define): the pair's one build
// is under way, its join half running or done. The group's half starts once
// the join is live (catalog/chains.h); status reads the pair as backfilling
// meanwhile rather than as waiting again (reads/part_status.h).
std::string JoinBuildsForGroupSql(const std::string& schema, std::string_view group,
                                  std::string_view join);

// The name of the transform a user knows `name` as: the group reading it
// when `name` is a hidden part, else `name`.
Result<std::string> OwnerName(pg::Connection& conn, const std::string& schema,
                              const std::string& name);

// Refuses (not_found, naming the transform to address) a statement or read
// addressed to a hidden part.
Status RefuseHiddenPart(pg::Connection& conn, const std::string& schema, const Transform& t);

}  // namespace trellis::catalog
