// One staging transaction: consume a batch of committed capture rows, fan
// them out into ledger pages, and delete them, atomically.
#pragma once

#include <string>

#include "pg/connection.h"
#include "trellis/status.h"

namespace trellis::staging {

struct StagedBatch {
  long consumed = 0;  // capture rows consumed (0: nothing to do)
  // A transform was catching up when the batch began: it may be promoted
  // (catalog::PromoteCaughtUp), which no other can be.
  bool catching_up = false;
};

Result<StagedBatch> StageBatch(pg::Connection& conn, const std::string& schema, int batch_rows,
                               int page_keys);

}  // namespace trellis::staging
