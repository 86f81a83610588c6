// Source index gaps for status/2 (issue 11): the source indexes a
// transform's maintenance wants and lacks, each with the CREATE INDEX that
// closes it. Read fresh on every status call, so a gap disappears as soon
// as its index exists (no restart, no cache).
#pragma once

#include <vector>

#include "catalog/model.h"
#include "pg/connection.h"
#include "trellis/status.h"
#include "trellis/types.h"

namespace trellis::reads {

// A GROUP BY transform looks a group's source rows up by its GROUP BY
// values (every recompute of a dirty group): a gap (role "group_by") when
// the planner cannot serve that lookup with an index (none for aggregates
// over the whole table). A join has two lookups per joined input: the table
// it joins, by that side's join columns (role "join_from": which FROM keys a
// joined row's change reaches), and the joined table by its own join
// columns (role "join_joined": every recompute; its unique index closes it
// until someone drops that index). Empty for a projection. A transform
// defined WITHOUT SOURCE INDEX lists its gaps with opted_out set.
Result<std::vector<SourceIndexGapStatus>> ReadSourceIndexGaps(pg::Connection& conn,
                                                              const catalog::Transform& t);

}  // namespace trellis::reads
