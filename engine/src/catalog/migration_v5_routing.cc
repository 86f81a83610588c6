// Step 4 -> 5: what each transform reads from capture rows. A source's
// routing layout (sources.routing_columns) is the union of what its readers
// need: the key columns, then every column a reader routes (a GROUP BY's
// group columns, a join's columns). Each input records its own share, so a
// plan knows which layout positions it reads without reading the database,
// and the layout can be explained reader by reader.
#include "catalog/migration_steps.h"

namespace trellis::catalog::steps {

const std::string_view kV5Routing = R"sql(
-- The source columns this input's transform reads from capture rows, beside
-- the source's key: for a GROUP BY, the columns its group expressions use.
-- Every name is in the source's routing layout.
ALTER TABLE {schema}.transform_inputs ADD COLUMN routed_columns text[] NOT NULL DEFAULT '{}';
)sql";

}  // namespace trellis::catalog::steps
