#include "staging/failing_readers.h"

#include "catalog/address.h"
#include "catalog/states.h"
#include "grammar/address.h"
#include "log/component_log.h"
#include "plan/bind.h"

namespace trellis::staging {

bool MayBeReadersFailure(const Status& error) {
  // Not a failure a retry of the batch may not meet again (a lost
  // connection, a deadlock, a cancel, a lock timeout). drain/failure_class.h
  // classifies the same way, but staging may not include drain.
  if (error.code() == Code::kConnection || !error.sqlstate) return false;
  for (std::string_view cls : {"08", "40", "53", "55P03", "57"}) {
    if (error.sqlstate->rfind(cls, 0) == 0) return false;
  }
  return true;
}

Result<std::set<int>> FindFailingReaders(pg::Connection& conn, const std::string& schema,
                                         const capture::FeedBatch& batch,
                                         const std::vector<catalog::Transform>& all,
                                         std::set<int>* unfolded) {
  // The batch's rows as the staging statement takes them, read only.
  const std::string consumed = batch.PeekSql(1, /*member=*/true);
  const pg::Params params = batch.Params();
  std::set<int> failing;
  for (const auto& t : all) {
    auto plan = plan::Bind(t, schema);
    if (!plan.ok()) return plan.status();
    // What staging runs for it: its delta rows (folded, then unfolded when
    // the fold fails), or its dirty keys.
    std::vector<std::string> readers;
    const std::string deltas = plan.value()->DeltaRowsSql();
    const std::string unfolded_deltas = plan.value()->UnfoldedDeltaRowsSql();
    if (!deltas.empty()) {
      readers.push_back(deltas);
      if (unfolded_deltas != deltas) readers.push_back(unfolded_deltas);
    } else {
      for (const auto& input : plan.value()->DirtyKeySql()) readers.push_back(input.sql);
    }
    for (size_t i = 0; i < readers.size(); ++i) {
      TRELLIS_RETURN_IF_ERROR(conn.Exec("SAVEPOINT trellis_reader"));
      // count(DISTINCT key): the key must be computed (an unused column
      // of a subquery is not), as staging computes it; row_values too, for
      // a folded reader (its folded values are what may fail).
      Status tried =
          conn.Exec("WITH consumed AS (" + consumed +
                        ") SELECT count(DISTINCT key), count(DISTINCT row_values) FROM (" +
                        readers[i] + ") AS d",
                    params);
      bool failed = false;
      if (!tried.ok()) {
        if (!MayBeReadersFailure(tried)) return tried;
        TRELLIS_RETURN_IF_ERROR(conn.Exec("ROLLBACK TO SAVEPOINT trellis_reader"));
        failed = true;
      }
      TRELLIS_RETURN_IF_ERROR(conn.Exec("RELEASE SAVEPOINT trellis_reader"));
      const bool folded_reader = !deltas.empty() && unfolded_deltas != deltas && i == 0;
      if (folded_reader) {
        if (!failed) break;  // the fold stages: nothing more to try
        unfolded->insert(t.id);
        continue;  // try the row versions unfolded
      }
      if (failed) {
        unfolded->erase(t.id);
        failing.insert(t.id);
      }
    }
  }
  return failing;
}

Status RebuildFailingReaders(pg::Connection& conn, const std::string& schema,
                             const std::vector<catalog::Transform>& all,
                             const std::set<int>& failing) {
  static const auto logger = log::Component("trellis::staging");
  for (const auto& t : all) {
    if (!failing.count(t.id)) continue;
    // The error's text may quote a row value: only its code at warning.
    logger->warn(
        "transform {}: a group expression fails for a captured row; the transform is rebuilt "
        "instead, and its status shows the rebuild's failure until the row is fixed",
        catalog::LogNameOf(conn, schema, t).label);
    TRELLIS_RETURN_IF_ERROR(catalog::RequestRebuild(conn, schema, t.id, std::nullopt));
  }
  return Status::OK();
}

}  // namespace trellis::staging
