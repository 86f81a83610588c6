#include "staging/staging_worker.h"

#include "capture/disruption.h"
#include "capture/functions.h"
#include "catalog/migrations.h"
#include "catalog/states.h"
#include "log/component_log.h"
#include "sql/quote.h"
#include "staging/relation_sync.h"
#include "staging/stage_batch.h"
#include "trellis/engine_metrics.h"
#include "workers/locks.h"

namespace trellis::staging {
namespace {
// How often the staging worker looks for capture changed outside Trellis.
constexpr auto kCaptureCheckEvery = std::chrono::seconds(1);
}  // namespace

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
  elected_ = true;
  GlobalEngineMetrics().staging_elected.fetch_add(1, std::memory_order_relaxed);
  log::Component("trellis::staging")->info("staging worker {} elected", id());
  return true;
}

void StagingWorker::Disconnected() {
  // The election was this connection's session-level lock: it is gone.
  if (!elected_) return;
  elected_ = false;
  GlobalEngineMetrics().staging_elected.fetch_sub(1, std::memory_order_relaxed);
}

Result<bool> StagingWorker::Step(pg::Connection& conn) {
  if (const auto now = std::chrono::steady_clock::now();
      now - last_capture_check_ >= kCaptureCheckEvery) {
    auto tx = pg::Transaction::Begin(conn);
    if (!tx.ok()) return tx.status();
    auto found = capture::PauseDisruptedReaders(conn, options().schema);
    if (!found.ok()) return found.status();
    // A routed column whose type changed may need its source's capture
    // functions to pin settings they do not, or no longer need them.
    auto repinned = capture::RepinChangedSources(conn, options().schema);
    if (!repinned.ok()) return repinned.status();
    TRELLIS_RETURN_IF_ERROR(tx.value()->Commit());
    // Partitions and children that appeared under a source or left it.
    auto synced = SyncRelations(conn, options().schema);
    if (!synced.ok()) return synced.status();
    last_capture_check_ = now;
  }
  auto staged = StageBatch(conn, options().schema, kBatchRows, kPageKeys);
  if (!staged.ok()) return staged.status();
  GlobalEngineMetrics().capture_rows_staged.fetch_add(static_cast<uint64_t>(staged->consumed),
                                                      std::memory_order_relaxed);
  if (staged->consumed > 0) NudgeRole("drain");
  // Only a transform that was catching up can be promoted: the others cost
  // no statement. One that starts catching up after the batch began is seen
  // by the next step, ~10 ms later.
  if (staged->catching_up)
    TRELLIS_RETURN_IF_ERROR(catalog::PromoteCaughtUp(conn, options().schema));
  // Only a full batch runs the next one at once. After a partial one the loop
  // waits its idle pause, so a steady stream of small writes is staged in
  // batches of ~10 ms worth rather than one transaction per write: under
  // single-row writes that cut the workers' cost per write several-fold,
  // for ~5 ms of freshness on average (spec/engine.md "Staging").
  return staged->consumed >= kBatchRows;
}

}  // namespace trellis::staging
