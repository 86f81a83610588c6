// Source index gaps for status/2 (issue 11): the source indexes a
// transform's maintenance wants and lacks, each with the CREATE INDEX that
// closes it, as its plan finds them (plan::CheckPlan::SourceIndexGaps: a
// group's lookup by its GROUP BY values, a join's two lookups per joined
// input, none for a projection). Read fresh on every status call, so a gap
// disappears as soon as its index exists (no restart, no cache). A
// transform defined WITHOUT SOURCE INDEX lists its gaps with opted_out set.
#pragma once

#include <string>
#include <vector>

#include "catalog/model.h"
#include "pg/connection.h"
#include "trellis/status.h"
#include "trellis/types.h"

namespace trellis::reads {

// `schema` is the catalog schema.
Result<std::vector<SourceIndexGapStatus>> ReadSourceIndexGaps(pg::Connection& conn,
                                                              const std::string& schema,
                                                              const catalog::Transform& t);

}  // namespace trellis::reads
