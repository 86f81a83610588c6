// Step 1 -> 2: catalog v2. The v1 catalog assumed a transform is a projection
// of one table keyed by that table's primary key; v2 records what each
// transform reads and how its target is keyed, so aggregates, joins, chains,
// partitions, quarantine and self-check are rows, not another migration.
// The step upgrades a v1 catalog in place, with its transforms live: their
// rows move into the new tables in the same transaction (tested in
// test/engine/catalog_test.cc). spec/engine.md "Catalog" describes each table.
//
// Three parts, one step: each component keeps its own part, between its
// markers, and the parts run in order in the one migration transaction.
#include "catalog/migration_steps.h"

namespace trellis::catalog::steps {

// ==== catalog (engine/src/catalog): inputs, target key, column roles, source
// relations, quarantine, held keys, self-check jobs ====
const std::string_view kV2Catalog = R"sql(
-- Every relation whose writes reach a source: the table itself (parent_relid
-- NULL) and, for a partitioned or inheritance parent, each partition or
-- child, which fires its own triggers for writes that name it.
CREATE TABLE {schema}.source_relations (
  source_id     int NOT NULL REFERENCES {schema}.sources(id) ON DELETE CASCADE,
  relid         oid NOT NULL UNIQUE,
  parent_relid  oid,
  added_at      timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (source_id, relid)
);
INSERT INTO {schema}.source_relations (source_id, relid) SELECT id, relid FROM {schema}.sources;

-- The tables a transform reads, in definition order: ordinal 1 is the FROM
-- table; each join names the input it joins to and the equal columns of both.
CREATE TABLE {schema}.transform_inputs (
  transform_id   int NOT NULL REFERENCES {schema}.transforms(id) ON DELETE CASCADE,
  ordinal        int NOT NULL,
  source_id      int NOT NULL REFERENCES {schema}.sources(id),
  alias          text NOT NULL,
  role           text NOT NULL CHECK (role IN ('from', 'inner_join', 'left_join')),
  joined_to      int,     -- the ordinal of the input this one joins to
  join_columns   text[],  -- this input's columns in the join's equalities
  joined_columns text[],  -- the matching columns of input joined_to, same order
  PRIMARY KEY (transform_id, ordinal),
  UNIQUE (transform_id, alias),
  CHECK ((role = 'from') = (ordinal = 1)),
  CHECK (role = 'from' OR (joined_to IS NOT NULL AND joined_to < ordinal
         AND cardinality(join_columns) > 0
         AND cardinality(join_columns) = cardinality(joined_columns))),
  FOREIGN KEY (transform_id, joined_to) REFERENCES {schema}.transform_inputs(transform_id, ordinal)
);
CREATE INDEX ON {schema}.transform_inputs (source_id);
INSERT INTO {schema}.transform_inputs (transform_id, ordinal, source_id, alias, role)
SELECT id, 1, source_id, source_alias, 'from' FROM {schema}.transforms;

-- The target's key, in key order: each column's name in the target, the
-- expression over the inputs that computes it, and its type. A projection is
-- keyed by its FROM table's primary key; a GROUP BY by its group expressions.
CREATE TABLE {schema}.target_key_columns (
  transform_id int NOT NULL REFERENCES {schema}.transforms(id) ON DELETE CASCADE,
  ordinal      int NOT NULL,
  name         text NOT NULL,
  expr         text NOT NULL,
  sql_type     text NOT NULL,
  PRIMARY KEY (transform_id, ordinal),
  UNIQUE (transform_id, name)
);
INSERT INTO {schema}.target_key_columns (transform_id, ordinal, name, expr, sql_type)
SELECT t.id, k.ord, k.name, format('%I.%I', t.source_alias, k.name), s.key_types[k.ord]
FROM {schema}.transforms t
JOIN {schema}.sources s ON s.id = t.source_id
CROSS JOIN LATERAL unnest(s.key_columns) WITH ORDINALITY AS k(name, ord);

ALTER TABLE {schema}.transforms
  DROP COLUMN source_id,
  DROP COLUMN source_alias,
  -- The plan room names the kinds; the loader refuses one it does not know.
  DROP CONSTRAINT transforms_kind_check,
  -- WITHOUT SOURCE INDEX: the transform runs without the source indexes its
  -- maintenance wants, and status lists the gaps as opted out.
  ADD COLUMN source_index_optional boolean NOT NULL DEFAULT false,
  -- The wire names of trellis/states.h (a catalog test checks they agree).
  ADD CONSTRAINT transforms_status_check CHECK (status IN
    ('waiting_to_backfill', 'backfilling', 'catching_up', 'live', 'paused')),
  ADD CONSTRAINT transforms_paused_kind_check CHECK (paused_kind IN
    ('operator', 'disruption', 'schema_change', 'failure', 'quarantine')),
  ADD CONSTRAINT transforms_paused_check CHECK ((status = 'paused') = (paused_kind IS NOT NULL));

-- A column's role in the target: a value computed from one row of the
-- inputs, an aggregate over a group, or a hidden column the maintenance keeps
-- (a group's row count, the sum behind an average).
ALTER TABLE {schema}.transform_columns
  ADD COLUMN role text NOT NULL DEFAULT 'value' CHECK (role IN ('value', 'aggregate', 'hidden')),
  ADD CONSTRAINT transform_columns_state_check CHECK (state IN ('live', 'paused')),
  ADD CONSTRAINT transform_columns_paused_kind_check CHECK (paused_kind IN
    ('operator', 'disruption', 'schema_change', 'failure', 'quarantine')),
  ADD CONSTRAINT transform_columns_paused_check CHECK ((state = 'paused') = (paused_kind IS NOT NULL));

-- Rows whose value of a quarantined column failed: the target key, the
-- failing input value(s), and PostgreSQL's error. Paged by key.
CREATE TABLE {schema}.quarantined_rows (
  transform_id int NOT NULL,
  column_name  text NOT NULL,
  key          text[] NOT NULL,
  input_values jsonb,
  sqlstate     text,
  error        text NOT NULL,
  since        timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (transform_id, column_name, key),
  FOREIGN KEY (transform_id, column_name) REFERENCES {schema}.transform_columns(transform_id, name)
    ON DELETE CASCADE ON UPDATE CASCADE
);

-- Keys held because they failed with nothing chargeable to a column (the
-- WHERE failed, the target refused the row): their target rows stay as they
-- were until release_key recomputes them.
CREATE TABLE {schema}.held_keys (
  transform_id   int NOT NULL REFERENCES {schema}.transforms(id) ON DELETE CASCADE,
  key            text[] NOT NULL,
  sqlstate       text,
  error          text NOT NULL,
  attempts       int NOT NULL DEFAULT 1,
  since          timestamptz NOT NULL DEFAULT now(),
  last_failed_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (transform_id, key)
);

-- One self-check job per target: a new check replaces a finished one. A
-- drain worker claims a queued job and compares the target with its
-- definition range by range (the ranges are jobs of the executor).
CREATE TABLE {schema}.self_check_jobs (
  id            bigserial PRIMARY KEY,
  transform_id  int NOT NULL UNIQUE REFERENCES {schema}.transforms(id) ON DELETE CASCADE,
  mode          text NOT NULL CHECK (mode IN ('full', 'sample')),
  sample_size   bigint CHECK (sample_size > 0),
  state         text NOT NULL DEFAULT 'queued'
                CHECK (state IN ('queued', 'running', 'done', 'failed', 'cancelled')),
  worker_id     text,
  rows_compared bigint NOT NULL DEFAULT 0,
  report        jsonb,
  error         text,
  created_at    timestamptz NOT NULL DEFAULT now(),
  started_at    timestamptz,
  finished_at   timestamptz,
  CHECK ((mode = 'sample') = (sample_size IS NOT NULL))
);
)sql";
// ==== end catalog ====

// ==== capture (engine/src/capture): routing layout; v1 functions get privileges ====
const std::string_view kV2Capture = R"sql(
-- The routing layout needs no DDL: sources.routing_columns is only ever
-- appended to (capture::EnsureRoutingColumns), and each capture row records
-- its width in its 2-D array's own header (spec/engine.md "Capture").
--
-- v1 made capture functions that ran with the writer's rights, so a role
-- with only DML rights on a source could not write it once captured. They
-- get what capture/functions.cc makes now: SECURITY DEFINER (as their
-- owner, the engine's role), a pinned search_path, no EXECUTE for PUBLIC.
-- Their bodies already qualify every name. The catalog's namespace comes
-- from its sources table's row type, so no schema name is written inside
-- the DO body, where it could end the quote.
SELECT set_config('trellis.migrating_namespace', t.typnamespace::text, true)
FROM pg_type t WHERE t.oid = pg_typeof(NULL::{schema}.sources);
DO $capture_v2$
DECLARE
  f regprocedure;
BEGIN
  FOR f IN
    SELECT p.oid::regprocedure FROM pg_proc p
    WHERE p.pronamespace = current_setting('trellis.migrating_namespace')::oid
      AND p.proname ~ '^capture_[0-9]+_(insert|update|delete|truncate)$' AND p.pronargs = 0
  LOOP
    EXECUTE format('ALTER FUNCTION %s SECURITY DEFINER SET search_path = pg_catalog, pg_temp', f);
    EXECUTE format('REVOKE ALL ON FUNCTION %s FROM PUBLIC', f);
  END LOOP;
END
$capture_v2$;
)sql";
// ==== end capture ====

// ==== jobs (engine/src/drain, engine/src/plan): jobs and ranges of first
// builds, rebuilds, column rebuilds, partition corrections and self-checks;
// drain failures ====
const std::string_view kV2Jobs = R"sql(
-- One queue for the work on a target that is not ledger pages: a first
-- build's key ranges now (kind build_range); rebuilds, column rebuilds,
-- partition corrections and self-checks are later kinds. A job is claimed
-- FOR UPDATE SKIP LOCKED and deleted by the transaction that finishes it, so
-- a crashed worker leaves it for another; a failing one waits for
-- retry_at (spec/engine.md "Jobs").
CREATE TABLE {schema}.jobs (
  id           bigserial PRIMARY KEY,
  transform_id int NOT NULL REFERENCES {schema}.transforms(id) ON DELETE CASCADE,
  kind         text NOT NULL CHECK (kind IN ('build_range', 'rebuild', 'column_rebuild',
                                             'partition_correction', 'self_check')),
  lo           text[],           -- exclusive; NULL: from the first key
  hi           text[],           -- inclusive; NULL: through the last key
  est_rows     bigint NOT NULL DEFAULT 0,  -- for progress
  columns      text[],           -- a column rebuild's columns
  attempts     int NOT NULL DEFAULT 0,
  retry_at     timestamptz,
  last_error   text,
  created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX ON {schema}.jobs (transform_id, kind, id);
INSERT INTO {schema}.jobs (transform_id, kind, lo, hi, est_rows)
  SELECT transform_id, 'build_range', lo, hi, est_rows FROM {schema}.build_ranges
  ORDER BY transform_id, ord;
DROP TABLE {schema}.build_ranges;

-- A transform's work that keeps failing with nothing else charged for it
-- (drain/charging.h): shown by status, retried with backoff, cleared when
-- nothing of the transform waits for a retry any more.
CREATE TABLE {schema}.drain_failures (
  transform_id  int PRIMARY KEY REFERENCES {schema}.transforms(id) ON DELETE CASCADE,
  unit_kind     text NOT NULL,   -- pages, build_range, rebuild, add_key
  failure_class text NOT NULL,   -- data_error or other
  since         timestamptz NOT NULL DEFAULT now(),
  last_at       timestamptz NOT NULL DEFAULT now(),
  attempts      int NOT NULL DEFAULT 1,
  retry_at      timestamptz NOT NULL,
  sqlstate      text,
  message       text NOT NULL,
  parts         text[] NOT NULL  -- what failed: keys or key ranges (the first 20)
);
)sql";
// ==== end jobs ====

}  // namespace trellis::catalog::steps
