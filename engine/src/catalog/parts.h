// The parts of a transform that runs as stages (spec/engine.md "Stages"): the
// user's transform (the owner) and the hidden transforms it reads, in order,
// whose targets are in the catalog schema: a grouped join's hidden join; a
// compiled statement's hidden grouping (and, over a join, the hidden join
// under it). A user sees one transform: statements address the owner, act
// on every part, and refuse to address a hidden one alone.
// The catalog records it (step 15): the hidden part's owner_id is the
// group's id (spec/engine.md "Stages"); catalog/composite.h loads a
// transform with its stages.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "catalog/model.h"
#include "pg/connection.h"
#include "trellis/status.h"

namespace trellis::catalog {

// True for a stage of another transform (a hidden part): it has an owner.
bool IsHiddenPart(const Transform& t);

// Records transforms `stage_ids`, in order, as the stages of `owner_id`:
// the first reads only sources, each next one reads the one before it, and
// the owner reads the last (stage orders 1..n, the owner n + 1). A stage
// that had an owner moves to this one. The one writer of owner_id and
// stage_order after define.
Status RecordStages(pg::Connection& conn, const std::string& schema,
                    const std::vector<int>& stage_ids, int owner_id);

// SQL true when the transforms row `owner` (an alias) waits to build and the
// row `stage`, one of its stages, began a build after the owner's was asked
// for (its pending rebuild's job, or its define): the transform's one build
// is under way, that stage's part running or done. Each stage starts once
// the one before it is live (catalog/chains.h); status reads the whole as
// backfilling meanwhile rather than as waiting again
// (reads/part_status.h).
std::string StageBuildsForOwnerSql(const std::string& schema, std::string_view owner,
                                   std::string_view stage);

// The name of the transform a user knows `name` as: its owner when `name`
// is a hidden part, else `name`.
Result<std::string> OwnerName(pg::Connection& conn, const std::string& schema,
                              const std::string& name);

// Refuses (not_found, naming the transform to address) a statement or read
// addressed to a hidden part.
Status RefuseHiddenPart(pg::Connection& conn, const std::string& schema, const Transform& t);

}  // namespace trellis::catalog
