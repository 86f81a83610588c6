// Capture triggers: four statement-level AFTER triggers on a captured table,
// calling its source's capture functions (capture/functions.h). A table is
// named by oid, so a table renamed since it was registered is followed, and
// the same calls will serve the several tables a join reads and a
// partitioned source's partitions. See spec/engine.md "Capture".
#pragma once

#include <string>

#include "pg/connection.h"
#include "trellis/status.h"

namespace trellis::capture {

// (Re)creates the four capture triggers on table `relid` calling source
// `source_id`'s capture functions (replacing any of the catalog's earlier
// ones there), set ENABLE ALWAYS so they fire under
// session_replication_role = replica too. not_found when the table is gone.
// REQUIRES: inside a transaction; the functions exist.
Status InstallTriggers(pg::Connection& conn, const std::string& schema, int source_id,
                       const std::string& relid);

// Drops the capture triggers of the catalog in `schema` from table `relid`
// (also any stale one calling the catalog's capture functions under another
// name); nothing to do when the table is gone.
Status RemoveTriggers(pg::Connection& conn, const std::string& schema, const std::string& relid);

}  // namespace trellis::capture
