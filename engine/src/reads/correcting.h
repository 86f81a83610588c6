// The corrections a target is under for relations that appeared under a
// source it reads or left it (staging/relation_sync.h): what status lists
// as `correcting`.
#pragma once

#include <string>
#include <vector>

#include "pg/connection.h"
#include "trellis/status.h"
#include "trellis/types.h"

namespace trellis::reads {

// The unfinished corrections of transform `transform_id`, oldest first:
// those with pages left to drain (a finished one's row lingers until the
// staging worker's next round deletes it, and is not listed).
Result<std::vector<CorrectingNodeStatus>> ReadCorrecting(pg::Connection& conn,
                                                         const std::string& schema,
                                                         int transform_id);

}  // namespace trellis::reads
