// Step 10 -> 11: the argument type of each aggregate column (spec/engine.md
// "Deltas", "Exact sums"). Released: never edited again.
#include "catalog/migration_steps.h"

namespace trellis::catalog::steps {

const std::string_view kV11ArgumentTypes = R"sql(
-- The type of a sum or avg column's argument as PostgreSQL types it
-- (format_type with its typmod: "bigint", "numeric(12,2)", "numeric"),
-- recorded at define and ALTER: the sum's own type (numeric for both
-- bigint and numeric arguments) cannot say how a delta keeps it exactly.
-- NULL for every other column, and for columns defined before this step:
-- those keep the upkeep they were created with (a running sum kept by
-- deltas only where its type is bigint), since their hidden state was
-- created for it; ALTER COLUMN or a new define records the type.
ALTER TABLE {schema}.transform_columns ADD COLUMN argument_type text;
)sql";

}  // namespace trellis::catalog::steps
