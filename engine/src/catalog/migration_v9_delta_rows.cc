// Step 8 -> 9: delta rows lose their foreign key and their (page_id, key)
// index. Released: never edited again.
#include "catalog/migration_steps.h"

namespace trellis::catalog::steps {

const std::string_view kV9DeltaRows = R"sql(
-- Staging writes one delta row per captured row version, so their upkeep is
-- staging's cost per write. The foreign key checked every inserted row
-- against pages (half of staging a 10,000-row UPDATE, measured), and the
-- index on (page_id, key) sorted text arrays into a btree; the drain reads
-- delta rows only by page. Whoever deletes pages now deletes their delta
-- rows in the same statement (the drain's completion, DROP TRANSFORM).
ALTER TABLE {schema}.delta_rows DROP CONSTRAINT delta_rows_page_id_fkey;
DROP INDEX {schema}.delta_rows_page_id_key_idx;
CREATE INDEX delta_rows_page_id_idx ON {schema}.delta_rows (page_id);
)sql";

}  // namespace trellis::catalog::steps
