#include "catalog/locks.h"

namespace trellis::catalog {
namespace {

// The fence's advisory key, one per catalog schema.
constexpr const char* kFenceKey = "hashtext('trellis.staging_fence:' || $1), 0";

}  // namespace

Result<std::unique_ptr<pg::Transaction>> BeginStagingBatch(pg::Connection& conn,
                                                           const std::string& schema) {
  return pg::Transaction::BeginWith(
      conn, std::string("SELECT pg_advisory_xact_lock_shared(") + kFenceKey + ")", {schema});
}

Status FenceStaging(pg::Connection& conn, const std::string& schema) {
  return conn.Exec(std::string("SELECT pg_advisory_xact_lock(") + kFenceKey + ")", {schema});
}

Result<bool> TryStagingFenceShared(pg::Connection& conn, const std::string& schema) {
  auto rows = conn.QueryPrepared(
      std::string("SELECT pg_try_advisory_xact_lock_shared(") + kFenceKey + ")", {schema});
  if (!rows.ok()) return rows.status();
  return rows->text(0, 0) == "t";
}

}  // namespace trellis::catalog
