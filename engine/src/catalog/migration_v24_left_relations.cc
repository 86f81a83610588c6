// Step 23 -> 24: the relations that left a source, watched for a return
// the relation sync did not see (spec/engine.md "Partitioned and inherited
// sources", "Attached and detached between two rounds"). Released: never
// edited again.
#include "catalog/migration_steps.h"

namespace trellis::catalog::steps {

// One row per relation the sync forgot (detached, or moved out from under
// the source), with the signature of its catalog rows then
// (capture::RelationSignatureSql). A relation attached again and detached
// again before the sync's next round leaves no link to see, but its
// signature changes (ATTACH and DETACH rewrite its pg_class row, INHERIT
// and NO INHERIT its columns' pg_attribute rows): the sync then corrects
// the targets as for a detach. A row goes when its relation is captured
// again or its source goes. IF NOT EXISTS: the migration tests rewind a
// catalog's version and run later steps again.
const std::string_view kV24LeftRelations = R"sql(
CREATE TABLE IF NOT EXISTS {schema}.left_relations (
  source_id  int NOT NULL REFERENCES {schema}.sources(id) ON DELETE CASCADE,
  relid      oid NOT NULL,
  signature  text NOT NULL,
  left_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (source_id, relid)
);
)sql";

}  // namespace trellis::catalog::steps
