#include "staging/staging_worker.h"

#include <exception>
#include <string>

#include "capture/feed.h"
#include "capture/functions.h"
#include "capture/row_security.h"
#include "capture/slot_health.h"
#include "capture/wal_stream.h"
#include "catalog/migrations.h"
#include "catalog/states.h"
#include "log/component_log.h"
#include "sql/quote.h"
#include "staging/relation_sync.h"
#include "staging/stage_batch.h"
#include "trellis/engine_metrics.h"
#include "workers/locks.h"
#include "workers/progress.h"

namespace trellis::staging {
namespace {
// How often the staging worker looks for capture changed outside Trellis.
constexpr auto kCaptureCheckEvery = std::chrono::seconds(1);
// How often it repeats a warning about row-level security that lasts.
constexpr auto kRowSecurityRemindEvery = std::chrono::minutes(10);
}  // namespace

StagingWorker::StagingWorker(ConnectOptions options, StagingChore chore)
    : WorkerLoop(std::move(options), "staging", workers::MakeWorkerId("staging")),
      chore_(std::move(chore)) {}

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
  // The slot is read through this worker's own walsender stream.
  capture::OwnWalStreams(options().url, options().application_name + " staging");
  GlobalEngineMetrics().staging_elected.fetch_add(1, std::memory_order_relaxed);
  log::Component("trellis::staging")->info("staging worker {} elected", id());
  return true;
}

void StagingWorker::Disconnected() {
  capture::ReleaseWalStreams();
  // The election was this connection's session-level lock: it is gone.
  if (!elected_) return;
  elected_ = false;
  GlobalEngineMetrics().staging_elected.fetch_sub(1, std::memory_order_relaxed);
  last_chore_ = {};
  capture::ClearSlotMetrics();
  if (chore_.resigned) chore_.resigned();
}

Result<bool> StagingWorker::Step(pg::Connection& conn) {
  if (const auto now = std::chrono::steady_clock::now();
      now - last_capture_check_ >= kCaptureCheckEvery) {
    // Logical capture: the slot's health, repairs and lag metrics.
    TRELLIS_RETURN_IF_ERROR(capture::TendSlot(conn, options().schema, slot_tending_));
    auto tx = pg::Transaction::Begin(conn);
    if (!tx.ok()) return tx.status();
    auto found = capture::CatalogFeed(options().schema)->PauseDisruptedReaders(conn);
    if (!found.ok()) return found.status();
    // A routed column whose type changed may need its source's capture
    // functions to pin settings they do not, or no longer need them.
    auto repinned = capture::RepinChangedSources(conn, options().schema);
    if (!repinned.ok()) return repinned.status();
    TRELLIS_RETURN_IF_ERROR(tx.value()->Commit());
    // Partitions and children that appeared under a source or left it.
    auto synced = SyncRelations(conn, options().schema);
    if (!synced.ok()) return synced.status();
    TRELLIS_RETURN_IF_ERROR(WarnOfRowSecurity(conn));
    last_capture_check_ = now;
  }
  if (const auto now = std::chrono::steady_clock::now();
      chore_.run && now - last_chore_ >= chore_.every) {
    // The chore is a read for the operators: its failure must not cost the
    // election, so it ends the step only when the connection is gone. Nor
    // may a throw: the step it ended would reconnect and run the chore first
    // again, and no batch would be staged while it kept throwing.
    Status done = RunChore(conn);
    if (!done.ok() && (conn.broken() || stopping())) return done;
    if (!done.ok()) {
      log::Component("trellis::staging")
          ->warn("staging worker {}: its periodic read failed: {}", id(), done.ToString());
    }
    last_chore_ = now;
  }
  auto staged = StageBatch(conn, options().schema, kBatchRows, kPageKeys);
  if (!staged.ok()) return staged.status();
  GlobalEngineMetrics().capture_rows_staged.fetch_add(static_cast<uint64_t>(staged->consumed),
                                                      std::memory_order_relaxed);
  // StageBatch woke this process's drain workers as the pages committed.
  if (staged->consumed > 0) workers::NoteProgress();  // a waiter's writes may now all be in pages
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

Status StagingWorker::RunChore(pg::Connection& conn) {
  try {
    return chore_.run(conn, options().schema);
  } catch (const std::exception& e) {
    return Status::Internal(std::string("unexpected failure: ") + e.what());
  }
}

Status StagingWorker::WarnOfRowSecurity(pg::Connection& conn) {
  auto exposed = capture::FindRowSecurityExposures(conn, options().schema);
  if (!exposed.ok()) return exposed.status();
  std::string what;
  for (const auto& e : exposed.value()) {
    what += (what.empty() ? "" : ", ") + e.table + " (read by " + e.transform + ")";
  }
  const auto now = std::chrono::steady_clock::now();
  auto logger = log::Component("trellis::staging");
  if (what.empty()) {
    if (!row_security_exposed_.empty()) {
      logger->info("no transform reads a table with row-level security any more");
    }
    row_security_exposed_.clear();
    return Status::OK();
  }
  // Once when it starts or changes, then a reminder every few minutes.
  if (what == row_security_exposed_ && now - row_security_warned_at_ < kRowSecurityRemindEvery) {
    return Status::OK();
  }
  logger->warn(
      "row-level security is enabled on {}, after the define: each target holds rows past "
      "those tables' policies, and whoever may read it sees them all. Restrict who may read "
      "the target or DROP TRANSFORM it; a transform defined WITHOUT ROW SECURITY is not "
      "reported",
      what);
  row_security_exposed_ = what;
  row_security_warned_at_ = now;
  return Status::OK();
}

}  // namespace trellis::staging
