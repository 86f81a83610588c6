// Step 20 -> 21: what each batch path has cost a transform (spec/engine.md
// "Batch paths"). Released: never edited again.
#include "catalog/migration_steps.h"

namespace trellis::catalog::steps {

// One row per transform and path the drain took for it: the chooser's
// measured cost factor (measured time over the path's modelled work, a
// decaying average: drain/path_chooser.h), the cost per row status shows
// (microseconds per key for delta and recompute, per target row for a
// rebuild), and the last batch of the path (its rows, milliseconds, time
// and the chooser's reason). failed_at: the last rebuild that failed (the
// batch then went by its pages), which keeps the chooser off the rebuild
// for a while. Written in each drain's own transaction. IF NOT EXISTS: the
// migration tests rewind a catalog's version and run later steps again.
const std::string_view kV21BatchPaths = R"sql(
CREATE TABLE IF NOT EXISTS {schema}.batch_paths (
  transform_id int NOT NULL REFERENCES {schema}.transforms(id) ON DELETE CASCADE,
  path         text NOT NULL CHECK (path IN ('delta', 'recompute', 'rebuild')),
  factor       float8 NOT NULL,
  us_per_row   float8 NOT NULL,
  batches      bigint NOT NULL DEFAULT 0,
  last_rows    bigint NOT NULL DEFAULT 0,
  last_ms      float8 NOT NULL DEFAULT 0,
  last_at      timestamptz NOT NULL DEFAULT now(),
  last_reason  text,
  failed_at    timestamptz,
  PRIMARY KEY (transform_id, path)
);
)sql";

}  // namespace trellis::catalog::steps
