// Step 0 -> 1: the whole first catalog. Released: never edited again.
#include "catalog/migration_steps.h"

namespace trellis::catalog::steps {

const std::string_view kV1 = R"sql(
CREATE TABLE {schema}.sources (
  id            serial PRIMARY KEY,
  relid         oid NOT NULL UNIQUE,
  schema_name   text NOT NULL,
  table_name    text NOT NULL,
  key_columns   text[] NOT NULL,
  key_types     text[] NOT NULL,
  -- The columns whose values each capture row carries, key columns first.
  routing_columns text[] NOT NULL,
  UNIQUE (schema_name, table_name)
);

CREATE TABLE {schema}.transforms (
  id              serial PRIMARY KEY,
  target_schema   text NOT NULL,
  target_name     text NOT NULL,
  source_id       int NOT NULL REFERENCES {schema}.sources(id),
  source_alias    text NOT NULL,
  kind            text NOT NULL CHECK (kind IN ('projection', 'group_by', 'join')),
  definition      text NOT NULL,
  where_sql       text,
  status          text NOT NULL DEFAULT 'waiting_to_backfill',
  paused_kind     text,
  paused_reason   text,
  paused_at       timestamptz,
  backfill_cursor text[],
  backfill_columns text[],
  backfill_done   bigint NOT NULL DEFAULT 0,
  backfill_total  bigint,
  backfill_started_at timestamptz,
  backfill_finished_at timestamptz,
  catch_up_page   bigint,
  -- False while the first build runs: the target has no primary key yet
  -- (rows are appended and the key built once, which is much faster than
  -- maintaining it row by row), and drains leave its pages for later.
  key_indexed     boolean NOT NULL DEFAULT false,
  -- Capture of the source was changed outside Trellis since the last
  -- rebuild: RESUME reinstalls it and rebuilds (spec/engine.md "Capture").
  capture_disrupted boolean NOT NULL DEFAULT false,
  last_applied_at timestamptz,
  created_at      timestamptz NOT NULL DEFAULT now(),
  -- A transform is named by its target table's unqualified name.
  UNIQUE (target_name)
);

CREATE TABLE {schema}.transform_columns (
  transform_id  int NOT NULL REFERENCES {schema}.transforms(id) ON DELETE CASCADE,
  ordinal       int NOT NULL,
  name          text NOT NULL,
  expr          text NOT NULL,
  sql_type      text NOT NULL,
  state         text NOT NULL DEFAULT 'live',
  paused_kind   text,
  paused_reason text,
  PRIMARY KEY (transform_id, name)
);

-- The capture buffer: one row per writing statement, written by the capture
-- triggers inside the writer's transaction. `routing` is a 2-D text array: one
-- row per changed row version, one column per routing column of the source.
-- No key and no index: staging takes rows in any order and deletes them by
-- ctid, and every index would tax every captured statement.
CREATE TABLE {schema}.capture (
  source_id int NOT NULL,
  xid       xid8 NOT NULL DEFAULT pg_current_xact_id(),
  op        "char" NOT NULL,
  routing   text[]
);

-- The ledger: dirty target keys per transform, drained by recompute. `keys`
-- is a 2-D text array (one row per key); `buckets` the sorted key buckets the
-- keys fall in, which a drain locks before it reads the source.
CREATE TABLE {schema}.pages (
  id           bigserial PRIMARY KEY,
  transform_id int NOT NULL REFERENCES {schema}.transforms(id) ON DELETE CASCADE,
  buckets      int[] NOT NULL,
  keys         text[] NOT NULL,
  key_count    int NOT NULL,
  attempts     int NOT NULL DEFAULT 0,
  retry_at     timestamptz,
  last_error   text,
  created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX ON {schema}.pages (transform_id, id);

-- The key ranges of a first build not appended yet. The build is planned as
-- ranges so that every drain worker can append one at once; a range is claimed
-- FOR UPDATE SKIP LOCKED and deleted by the transaction that appends it, so a
-- crashed append leaves its range for another worker.
CREATE TABLE {schema}.build_ranges (
  transform_id int NOT NULL REFERENCES {schema}.transforms(id) ON DELETE CASCADE,
  ord          int NOT NULL,
  lo           text[],           -- exclusive; NULL: from the first key
  hi           text[],           -- inclusive; NULL: through the last key
  est_rows     bigint NOT NULL,  -- for backfill progress
  PRIMARY KEY (transform_id, ord)
);

-- A bulk statement's routing array is hundreds of kB: stored out of line
-- uncompressed, as compressing it cost the writer ~6% of a 100k-row INSERT
-- and it is read once and deleted. Small arrays stay inline either way.
ALTER TABLE {schema}.capture ALTER COLUMN routing SET STORAGE EXTERNAL;

-- Both queues see a row inserted and deleted for every write: vacuum them
-- early, or the claim queries wade through dead rows at the head.
ALTER TABLE {schema}.capture SET (autovacuum_vacuum_scale_factor = 0,
  autovacuum_vacuum_threshold = 2000, autovacuum_vacuum_cost_delay = 0);
ALTER TABLE {schema}.pages SET (autovacuum_vacuum_scale_factor = 0,
  autovacuum_vacuum_threshold = 2000, autovacuum_vacuum_cost_delay = 0);

CREATE TABLE {schema}.workers (
  id           text PRIMARY KEY,
  role         text NOT NULL CHECK (role IN ('staging', 'drain')),
  host         text NOT NULL,
  os_pid       int NOT NULL,
  started_at   timestamptz NOT NULL DEFAULT now(),
  heartbeat_at timestamptz NOT NULL DEFAULT now()
);
)sql";

}  // namespace trellis::catalog::steps
