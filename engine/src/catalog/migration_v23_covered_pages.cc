// Step 22 -> 23: a page says whether its delta rows cover every key it
// lists (spec/engine.md "Deltas"). Released: never edited again.
#include "catalog/migration_steps.h"

namespace trellis::catalog::steps {

// covered_width: set by staging when every key of the page came with delta
// rows, to the width (routed columns) those rows were staged with; NULL
// when some key carries none (a write naming a relation no longer under
// the source, a transform not taking deltas) and for every page written
// elsewhere. A drain by deltas of pages whose width is the plan's and whose
// keys hold no hold skips the recompute of keys without delta rows, which
// would find none (plan/group_plan.cc). IF NOT EXISTS: the migration tests
// rewind a catalog's version and run later steps again.
const std::string_view kV23CoveredPages = R"sql(
ALTER TABLE {schema}.pages ADD COLUMN IF NOT EXISTS covered_width smallint;
)sql";

}  // namespace trellis::catalog::steps
