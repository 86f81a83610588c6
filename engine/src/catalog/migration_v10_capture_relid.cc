// Step 9 -> 10: each capture row names the relation its statement wrote
// (spec/engine.md "Deltas", "Partitioned and inherited sources").
// Released: never edited again.
#include "catalog/migration_steps.h"

namespace trellis::catalog::steps {

// A write naming a partition or inheritance child is captured by that
// relation's own triggers, which call the source's functions; `relid` says
// which relation it was (the trigger's TG_RELID), so staging can tell a
// write to a relation still under the source (a delta) from one to a
// relation detached a moment ago (recomputed instead). NULL: written by a
// function made before this step, which staging treats as unknown.
//
// The functions installed before this step get the column in their body:
// each body is the one statement capture/functions.cc made, so the rewrite
// matches its exact opening (the quoted catalog schema, where every `"` of
// the name is doubled, then `."capture"`), and a body that does not match
// is left alone (its rows are recomputed, as before deltas). The new text
// replaces the body inside pg_get_functiondef, which keeps the SET clauses,
// SECURITY DEFINER and a dollar-quote tag the body does not contain. The
// namespace reaches the DO block as in step 7.
const std::string_view kV10CaptureRelid = R"sql(
ALTER TABLE {schema}.capture ADD COLUMN relid oid;

SELECT pg_catalog.set_config('trellis.catalog_namespace', t.typnamespace::pg_catalog.text, true)
FROM pg_catalog.pg_type t
WHERE t.oid = pg_catalog.pg_typeof(NULL::{schema}.sources);

DO $step$
DECLARE
  f record;
  body text;
BEGIN
  FOR f IN
    SELECT p.oid, p.prosrc
    FROM pg_catalog.pg_proc p
    WHERE p.pronamespace =
          pg_catalog.current_setting('trellis.catalog_namespace')::pg_catalog.oid
      AND p.proname ~ '^capture_[0-9]+_(insert|update|delete|truncate)$'
  LOOP
    body := pg_catalog.regexp_replace(f.prosrc,
      '^BEGIN INSERT INTO ("(?:[^"]|"")*"\."capture") \(source_id, op, routing\) VALUES \(([0-9]+), ''([IUD])'', ARRAY\(',
      'BEGIN INSERT INTO \1 (source_id, op, relid, routing) VALUES (\2, ''\3'', TG_RELID, ARRAY(');
    body := pg_catalog.regexp_replace(body,
      '^BEGIN INSERT INTO ("(?:[^"]|"")*"\."capture") \(source_id, op\) VALUES \(([0-9]+), ''T''\);',
      'BEGIN INSERT INTO \1 (source_id, op, relid) VALUES (\2, ''T'', TG_RELID);');
    IF body <> f.prosrc THEN
      EXECUTE pg_catalog.replace(pg_catalog.pg_get_functiondef(f.oid), f.prosrc, body);
    END IF;
  END LOOP;
END
$step$;
)sql";

}  // namespace trellis::catalog::steps
