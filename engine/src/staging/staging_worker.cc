#include "staging/staging_worker.h"

#include <spdlog/spdlog.h>

#include "catalog/migrations.h"
#include "sql/quote.h"
#include "staging/stage_batch.h"
#include "workers/locks.h"

namespace trellis::staging {

StagingWorker::StagingWorker(ConnectOptions options)
    : WorkerLoop(std::move(options), "staging", workers::MakeWorkerId("staging")) {}

StagingWorker::~StagingWorker() { Stop(); }

Result<bool> StagingWorker::Prepare(pg::Connection& conn) {
  TRELLIS_RETURN_IF_ERROR(catalog::CheckMigrated(conn, options().schema));
  // Session-level lock: held while this connection lives, released by the
  // server when it dies, which is how a standby takes over from a crash.
  auto won = conn.Query("SELECT pg_try_advisory_lock(" + workers::StagingLockSpace() + ", 0)",
                        {options().schema});
  if (!won.ok()) return won.status();
  if (won->text(0, 0) != "t") return false;  // standby: retry shortly
  TRELLIS_RETURN_IF_ERROR(conn.Exec(
      "CREATE TEMPORARY TABLE IF NOT EXISTS trellis_staged "
      "(id bigint, source_id int, op \"char\", routing text[])"));
  spdlog::info("trellis_instance={}/{} staging worker {} elected", conn.database(),
               options().schema, id());
  return true;
}

Result<bool> StagingWorker::Step(pg::Connection& conn) {
  auto consumed = StageBatch(conn, options().schema, kBatchRows, kPageKeys);
  if (!consumed.ok()) return consumed.status();
  TRELLIS_RETURN_IF_ERROR(PromoteCaughtUp(conn, options().schema));
  return consumed.value() > 0;
}

}  // namespace trellis::staging
