// One staging transaction: take a batch of committed captured changes from
// the catalog's capture feed (capture/feed.h) and fan them out into ledger
// pages, atomically: the batch is taken exactly when its pages commit.
#pragma once

#include <string>

#include "pg/connection.h"
#include "plan/path_model.h"
#include "trellis/status.h"

namespace trellis::staging {

struct StagedBatch {
  long consumed = 0;  // captured rows consumed (0: nothing to do)
  // A transform was catching up when the batch began: it may be promoted
  // (catalog::PromoteCaughtUp), which no other can be.
  bool catching_up = false;
};

// Stages one batch of at most `batch_rows` rows of the catalog's feed
// (capture::CatalogFeed), in pages of at most `page_keys` keys. A
// transform's share of the batch of `whole_floor` row versions or more may
// be staged as one whole page (staging/whole_pages.h); tests of paging
// itself pass a floor no batch reaches.
// REQUIRES: no transaction open on `conn`.
Result<StagedBatch> StageBatch(pg::Connection& conn, const std::string& schema, int batch_rows,
                               int page_keys, long whole_floor = plan::kWholeFloorVersions);

}  // namespace trellis::staging
