// Step 6 -> 7: capture functions installed before it get the settings that
// fix a value's text form. Released: never edited again.
#include "catalog/migration_steps.h"

namespace trellis::catalog::steps {

// A capture function turns routed values to text in the writer's session,
// where DateStyle, IntervalStyle, extra_float_digits and bytea_output are
// the writer's; the engine reads the text back under its own. Functions
// installed from this version on carry the engine's values as SET clauses
// (capture/functions.h); this gives the existing ones the same. The values
// are written out here, not taken from the engine's list, because a
// released step must not change with the code.
//
// The catalog's namespace reaches the DO block through a transaction-local
// setting rather than its name inside the dollar-quoted body, where a
// schema name holding the quote's tag would end it. Only the name of the
// capture table's row type appears, outside any quote.
const std::string_view kV7TextForms = R"sql(
SELECT pg_catalog.set_config('trellis.catalog_namespace', t.typnamespace::pg_catalog.text, true)
FROM pg_catalog.pg_type t
WHERE t.oid = pg_catalog.pg_typeof(NULL::{schema}.sources);

DO $step$
DECLARE
  f pg_catalog.regprocedure;
BEGIN
  FOR f IN
    SELECT p.oid::pg_catalog.regprocedure
    FROM pg_catalog.pg_proc p
    WHERE p.pronamespace =
          pg_catalog.current_setting('trellis.catalog_namespace')::pg_catalog.oid
      AND p.proname ~ '^capture_[0-9]+_(insert|update|delete|truncate)$'
  LOOP
    EXECUTE 'ALTER FUNCTION ' || f::pg_catalog.text ||
            ' SET DateStyle = ''ISO,MDY'' SET IntervalStyle = ''postgres'''
            ' SET extra_float_digits = ''1'' SET bytea_output = ''hex''';
  END LOOP;
END
$step$;
)sql";

}  // namespace trellis::catalog::steps
