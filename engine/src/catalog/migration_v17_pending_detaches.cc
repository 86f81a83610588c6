// Step 16 -> 17: the detaches the relation sync saw pending (spec/engine.md
// "Partitioned and inherited sources", "A detach that is final").
// Released: never edited again.
#include "catalog/migration_steps.h"

namespace trellis::catalog::steps {

// A partition the relation sync found half detached (DETACH PARTITION ...
// CONCURRENTLY between its two transactions, or left so by an interrupted
// one) is forgotten by capture at once, but a writer that began before the
// detach may still change its rows through the source until the detach is
// final. One row per such partition, kept until the sync sees its link gone
// and rebuilds the delta-path targets over the source; kept in the catalog
// so that a port that dies in between leaves the rebuild to the next one.
// The rows go with their source. IF NOT EXISTS: a test that rewinds a
// catalog to an earlier version to run that version's step again leaves
// this table in place (drain_claim_test.cc, the v16 step).
const std::string_view kV17PendingDetaches = R"sql(
CREATE TABLE IF NOT EXISTS {schema}.pending_detaches (
  source_id  int NOT NULL REFERENCES {schema}.sources(id) ON DELETE CASCADE,
  relid      oid NOT NULL,
  node       text NOT NULL,
  seen_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (source_id, relid)
);
)sql";

}  // namespace trellis::catalog::steps
