// One staging transaction: take a batch of committed captured changes from
// the catalog's capture feed (capture/feed.h) and fan them out into ledger
// pages, atomically: the batch is taken exactly when its pages commit.
#pragma once

#include <string>

#include "catalog/model.h"
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

// Stages, in the caller's transaction, the capture rows that transaction
// wrote to `drained`'s target: a drain whose target another transform reads
// makes that transform's pages in its own commit, instead of leaving the
// rows to the next staging batch (a transaction, a wake-up and a load of
// every plan later: spec/engine.md "Stages", "A stage's writes staged by its
// drain"). Pages are made exactly as a staging batch makes them, for the
// transforms that read the target. Nothing is staged (0) when a define
// holds the staging fence, or when the statement fails (rolled back to a
// savepoint): the rows stay for the staging worker, which also finds which
// reader they fail for (a fold that fails among them, too). Returns the rows consumed.
// REQUIRES: inside a transaction; no savepoint open above it is rolled back
// after this returns without the rows being lost with it.
Result<long> StageOwnWrites(pg::Connection& conn, const std::string& schema,
                            const catalog::Transform& drained, int page_keys);

}  // namespace trellis::staging
