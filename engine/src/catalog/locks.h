// Catalog-level locks that order statements with the staging worker.
#pragma once

#include <memory>
#include <string>

#include "pg/connection.h"
#include "trellis/status.h"

namespace trellis::catalog {

// A staging batch takes the fence shared for its transaction; a define takes
// it exclusively before it commits. So no batch runs across a define's
// commit: a batch that loaded the transforms before the define committed,
// and consumed capture rows committed after it, would route none of them to
// the new transform (its first build may already have read past them).
// BeginStagingBatch begins the batch's transaction and takes the fence in
// one round trip (pg::Transaction::BeginWith), before any catalog table
// lock, so a batch waiting on such a lock cannot hold the fence against it;
// the fence is a statement of its own, so the batch's later statements see
// every define that committed before it was granted.
// REQUIRES (BeginStagingBatch): outside a transaction.
[[nodiscard]] Result<std::unique_ptr<pg::Transaction>> BeginStagingBatch(pg::Connection& conn,
                                                                         const std::string& schema);
// REQUIRES: inside a transaction.
[[nodiscard]] Status FenceStaging(pg::Connection& conn, const std::string& schema);
// Takes the fence shared for the current transaction if it is free of an
// exclusive holder now, without waiting: false when a define holds it. For
// staging inside a transaction that has taken other locks already (a
// drain's, staging::StageOwnWrites), which must not wait for a define that
// may wait for them.
// REQUIRES: inside a transaction.
[[nodiscard]] Result<bool> TryStagingFenceShared(pg::Connection& conn, const std::string& schema);

}  // namespace trellis::catalog
