// Step 3 -> 4: every build is jobs. Rebuilds and column rebuilds become
// key-range rows of the jobs table, like a first build's ranges, run by any
// drain worker through the unit executor; the serial cursor they used on
// the transforms row goes. A rebuild that was pending or under way when the
// catalog is upgraded becomes one pending job over every key (of the same
// columns) and starts again from the first key when a drain worker next
// plans it: recomputing in place is idempotent, so nothing is lost but the
// work already done. Tested in test/engine/catalog_test.cc.
#include "catalog/migration_steps.h"

namespace trellis::catalog::steps {

const std::string_view kV4Jobs = R"sql(
INSERT INTO {schema}.jobs (transform_id, kind, columns, est_rows)
SELECT id, CASE WHEN backfill_columns IS NULL THEN 'rebuild' ELSE 'column_rebuild' END,
       backfill_columns, 0
FROM {schema}.transforms
WHERE key_indexed AND backfill_finished_at IS NULL;

UPDATE {schema}.transforms SET
  backfill_started_at = NULL,
  backfill_total = NULL,
  status = CASE WHEN status = 'backfilling' THEN 'waiting_to_backfill' ELSE status END
WHERE key_indexed AND backfill_finished_at IS NULL;

-- A build's progress is the estimated rows of the jobs it has left.
ALTER TABLE {schema}.transforms
  DROP COLUMN backfill_cursor,
  DROP COLUMN backfill_columns,
  DROP COLUMN backfill_done;
)sql";

}  // namespace trellis::catalog::steps
