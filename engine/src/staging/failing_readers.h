// Staging that a failing group expression cannot stall (spec/engine.md
// "Charging a failure"). A GROUP BY transform's dirty keys are its group
// expressions evaluated over captured row versions; one that raises for a
// row (10 / x where x = 0) would fail the whole staging statement, and with
// it every transform's staging. When a batch fails with a data error, the
// transforms whose dirty-key SQL fails are found one by one; the batch is
// staged without their keys and each of them is rebuilt instead, a rebuild
// whose failure shows in status (drain_failure) until the row is fixed.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "capture/feed.h"
#include "catalog/model.h"
#include "pg/connection.h"
#include "trellis/status.h"

namespace trellis::staging {

// Whether a failed batch may have failed in a transform's dirty keys (a
// database error that a retry would meet again).
bool MayBeReadersFailure(const Status& error);

// The ids of the transforms of `all` whose dirty-key SQL fails with a data
// error over the rows of `batch` (FeedBatch::PeekSql). REQUIRES: inside the
// transaction that took the batch (each trial runs under a savepoint of its
// own).
// A transform whose folded delta rows fail (an aggregate argument or the
// WHERE raises for a row: the fold evaluates them at staging,
// plan/group_deltas.h) but whose unfolded ones do not is not failing: it
// goes into `unfolded`, and the batch stages its row versions unfolded, so
// the drain meets the failure and charges it as it did before folding.
Result<std::set<int>> FindFailingReaders(pg::Connection& conn, const std::string& schema,
                                         const capture::FeedBatch& batch,
                                         const std::vector<catalog::Transform>& all,
                                         std::set<int>* unfolded);

// Requests a rebuild of each transform of `failing`, with a warning.
Status RebuildFailingReaders(pg::Connection& conn, const std::string& schema,
                             const std::vector<catalog::Transform>& all,
                             const std::set<int>& failing);

}  // namespace trellis::staging
