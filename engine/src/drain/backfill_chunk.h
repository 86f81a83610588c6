// One backfill transaction: recompute the next key range of a transform that
// is being (re)built, and advance its cursor. The last chunk moves the
// transform to catching_up.
#pragma once

#include <string>

#include "pg/connection.h"
#include "trellis/status.h"

namespace trellis::drain {

// Returns true when a chunk was done, false when no transform needs one.
Result<bool> BackfillOneChunk(pg::Connection& conn, const std::string& schema, long chunk_rows);

}  // namespace trellis::drain
