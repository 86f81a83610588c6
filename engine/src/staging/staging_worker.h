// The staging worker: the one process per catalog (elected by an advisory
// lock; others wait as standbys) that turns committed capture rows into
// ledger pages of dirty target keys, and moves transforms from catching_up
// to live once their backlog is drained.
#pragma once

#include <chrono>
#include <functional>
#include <string>

#include "capture/slot_health.h"
#include "workers/worker_loop.h"

namespace trellis::staging {

// Work the elected staging worker also does every `every`, between batches,
// on its own connection (outside any transaction): the engine gives it the
// transform reports (reads/transform_reports.h), a folder staging may not
// include. Unset `run`: none.
struct StagingChore {
  std::chrono::milliseconds every{0};
  std::function<Status(pg::Connection&, const std::string& schema)> run;
  // Called when the worker stops being the elected one.
  std::function<void()> resigned;
};

class StagingWorker : public workers::WorkerLoop {
 public:
  explicit StagingWorker(ConnectOptions options, StagingChore chore = {});
  ~StagingWorker() override;

  // Capture rows consumed per transaction.
  static constexpr int kBatchRows = 500;
  // Keys per ledger page.
  static constexpr int kPageKeys = 1000;

 protected:
  Result<bool> Prepare(pg::Connection& conn) override;
  Result<bool> Step(pg::Connection& conn) override;
  void Disconnected() override;

 private:
  // Logs, while it lasts, that a transform reads a table whose row-level
  // security was enabled after its define (capture/row_security.h).
  [[nodiscard]] Status WarnOfRowSecurity(pg::Connection& conn);
  // chore_.run, with a throw turned into a failed Status.
  [[nodiscard]] Status RunChore(pg::Connection& conn);

  bool elected_ = false;  // this connection holds the election; worker thread only
  std::chrono::steady_clock::time_point last_capture_check_{};  // worker thread only
  // What WarnOfRowSecurity last warned of, and when; worker thread only.
  std::string row_security_exposed_;
  std::chrono::steady_clock::time_point row_security_warned_at_{};
  capture::SlotTending slot_tending_;  // logical capture's health, between rounds
  StagingChore chore_;
  std::chrono::steady_clock::time_point last_chore_{};  // worker thread only
};

}  // namespace trellis::staging
