// Step 12 -> 13: autovacuum never truncates the capture table.
// Released: never edited again.
#include "catalog/migration_steps.h"

namespace trellis::catalog::steps {

// Staging deletes every capture row it consumes, so after each batch the
// table is mostly or wholly empty, and autovacuum (which the table's
// settings run early) would cut its trailing empty pages off. That cut
// takes ACCESS EXCLUSIVE on the table, which every captured writer's
// trigger must wait out, and the next writes then extend the table again a
// page at a time. Keeping the pages costs at most the table's largest
// backlog in disk space, which later writes reuse. Measured: durable
// single-row INSERTs, 1 client, 1.20x -> 1.14x of an uncaptured table
// (bench/README.md "Capture cost (c), session 8").
const std::string_view kV13CaptureTruncate = R"sql(
ALTER TABLE {schema}.capture SET (vacuum_truncate = false);
)sql";

}  // namespace trellis::catalog::steps
