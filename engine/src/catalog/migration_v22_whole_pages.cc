// Step 21 -> 22: pages that stand for a whole target, and a path's fixed
// cost learned apart from the work that grows with a batch (spec/engine.md
// "Batch paths"). Released: never edited again.
#include "catalog/migration_steps.h"

namespace trellis::catalog::steps {

// A whole page lists no keys: staging wrote it instead of the keys of a
// bulk write too large to page key by key, and only a rebuild of the whole
// target drains it (drain/path_chooser.h). Its key_count is the captured
// row versions it stands for. IF NOT EXISTS: the migration tests rewind a
// catalog's version and run later steps again.
const std::string_view kV22WholePages = R"sql(
ALTER TABLE {schema}.pages ADD COLUMN IF NOT EXISTS whole boolean NOT NULL DEFAULT false;

-- A path's two measured factors (drain/path_chooser.h): `factor` is the
-- growing part's (batches - fixed_batches taught it), fixed_factor the
-- fixed cost's (fixed_batches taught it).
ALTER TABLE {schema}.batch_paths
  ADD COLUMN IF NOT EXISTS fixed_factor float8 NOT NULL DEFAULT 1,
  ADD COLUMN IF NOT EXISTS fixed_batches bigint NOT NULL DEFAULT 0;
)sql";

}  // namespace trellis::catalog::steps
