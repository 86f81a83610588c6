// Step 24 -> 25: delta rows folded at staging (spec/engine.md "Deltas",
// "Folded delta rows"). Released: never edited again.
#include "catalog/migration_steps.h"

namespace trellis::catalog::steps {

// folded: the row is one group's changes by one writer of one sign, folded
// by its plan (plan/group_deltas.h StageFoldedDeltaRowsSql): `row_values`
// holds the plan's folded contributions (its additive state columns, in
// the plan's order), not a row version's routed values. Rows staged before
// this step are row versions (false) and are drained as before, beside
// folded ones: the step converts nothing, so an engine upgraded while
// pages are pending reads each row as it was written. IF NOT EXISTS: the
// migration tests rewind a catalog's version and run later steps again.
const std::string_view kV25FoldedDeltas = R"sql(
ALTER TABLE {schema}.delta_rows ADD COLUMN IF NOT EXISTS folded boolean NOT NULL DEFAULT false;
)sql";

}  // namespace trellis::catalog::steps
