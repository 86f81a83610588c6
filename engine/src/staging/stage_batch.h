// One staging transaction: consume a batch of committed capture rows, fan
// them out into ledger pages, and delete them, atomically.
#pragma once

#include <string>

#include "pg/connection.h"
#include "trellis/status.h"

namespace trellis::staging {

// Returns how many capture rows were consumed (0: nothing to do).
Result<long> StageBatch(pg::Connection& conn, const std::string& schema, int batch_rows,
                        int page_keys);

}  // namespace trellis::staging
