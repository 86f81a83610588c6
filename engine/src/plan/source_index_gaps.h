// Source index gaps (issue 11): the source indexes a plan's maintenance
// wants and lacks, each with the CREATE INDEX that closes it, read fresh
// from the database (a gap disappears as soon as its index exists). The
// shared probe behind each kind's CheckPlan::SourceIndexGaps.
#pragma once

#include <string>
#include <vector>

#include "catalog/model.h"
#include "pg/connection.h"
#include "plan/aggregates/source_index_gap.h"
#include "trellis/status.h"
#include "trellis/types.h"

namespace trellis::plan {

// Whether the planner reads `table` (quoted, qualified) through an index
// for a lookup of `keys` over `alias`. Sequential scans are priced out for
// the probe only (the session's setting, reset at once).
Result<bool> LookupServed(pg::Connection& conn, const std::string& table, const std::string& alias,
                          const std::vector<aggregates::GroupingExpression>& keys);

// Appends the gap of looking `input`'s rows up by its `columns`, with
// `role`, when the lookup is not served and no equal gap is listed yet.
// Nothing for a column renamed or dropped (the transform fails anyway).
Status AddLookupGap(pg::Connection& conn, const catalog::Transform& t, const catalog::Input& input,
                    const std::vector<std::string>& columns, const std::string& role,
                    std::vector<SourceIndexGapStatus>& gaps);

}  // namespace trellis::plan
