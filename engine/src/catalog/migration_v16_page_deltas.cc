// Step 15 -> 16: each ledger page records how many delta rows it carries.
// Released: never edited again.
#include "catalog/migration_steps.h"

namespace trellis::catalog::steps {

// A drain caps what it claims by delta rows as well as by keys and pages
// (spec/engine.md "Drain"): a GROUP BY with few groups has few keys but no
// bound on its changes. Staging writes the count with the page, so the
// claim reads it from the page it already reads instead of counting delta
// rows. Pages staged before this step have NULL: the claim counts each as
// a whole claim's worth (drain/drain_page.cc says why). No default: adding
// the column rewrites nothing. IF NOT EXISTS: a test that rewinds a catalog
// to an earlier version to run that version's step again leaves this
// column in place (catalog_test.cc, the v15 step).
const std::string_view kV16PageDeltas = R"sql(
ALTER TABLE {schema}.pages ADD COLUMN IF NOT EXISTS delta_count int;
)sql";

}  // namespace trellis::catalog::steps
