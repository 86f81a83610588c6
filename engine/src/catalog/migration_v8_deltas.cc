// Step 7 -> 8: the delta path of group transforms (spec/engine.md
// "Deltas"). Released: never edited again.
#include "catalog/migration_steps.h"

namespace trellis::catalog::steps {

const std::string_view kV8Deltas = R"sql(
-- The changes a ledger page of a group transform carries besides its keys:
-- one row per captured row version (unfolded, so that each keeps the
-- transaction id of its write). `row_values` are the values of the
-- transform's routed columns (transform_inputs.routed_columns, in that
-- order) as text; the drain rebuilds the row from them and evaluates the
-- WHERE and the aggregate arguments over it. They go with their page.
CREATE TABLE {schema}.delta_rows (
  page_id     bigint NOT NULL REFERENCES {schema}.pages(id) ON DELETE CASCADE,
  xid         xid8 NOT NULL,      -- the writer's transaction (capture.xid)
  sign        smallint NOT NULL,  -- +1 a new row version, -1 an old one
  key         text[] NOT NULL,    -- the group, as the page lists it
  row_values  text[] NOT NULL
);
CREATE INDEX ON {schema}.delta_rows (page_id, key);

-- The snapshot each recompute of a group transform read, written by the
-- recompute's own statement: a delta whose writer is visible in it is in
-- the recompute's result and is skipped. `keys` lists the recomputed groups
-- (each key's text[] as text); NULL is every group.
CREATE TABLE {schema}.group_snapshots (
  transform_id int NOT NULL REFERENCES {schema}.transforms(id) ON DELETE CASCADE,
  keys         text[],
  snapshot     pg_snapshot NOT NULL
);
CREATE INDEX ON {schema}.group_snapshots (transform_id);

-- True when the input's routed columns carry everything the transform
-- evaluates per row (group expressions, aggregate arguments, the WHERE), so
-- its changes can travel as delta rows; false routes only what finds a
-- group (transforms defined before this step).
ALTER TABLE {schema}.transform_inputs ADD COLUMN routes_values boolean NOT NULL DEFAULT false;
)sql";

}  // namespace trellis::catalog::steps
