// A drain worker: a thread that drains ledger pages and, when none is
// waiting, runs and advances builds. Any number run, on any number of nodes.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <set>

#include "drain/charging.h"
#include "drain/drain_page.h"
#include "drain/self_check_runner.h"
#include "drain/unit_executor.h"
#include "workers/worker_loop.h"

namespace trellis::drain {

class DrainWorker : public workers::WorkerLoop {
 public:
  // `stage_own_writes`: stages a drain's writes to a target others read in
  // its own transaction (DrainPages); empty leaves them to staging.
  explicit DrainWorker(ConnectOptions options, StageOwnWritesFn stage_own_writes = {});
  ~DrainWorker() override;

  // Source rows per build range (a job: one transaction of a first build,
  // a rebuild or a column rebuild): a fraction of a second of work, so a
  // crash redoes little and drains of the transform wait behind a rebuild's
  // range only briefly.
  static constexpr long kBuildRangeRows = 200000;

 protected:
  Result<bool> Prepare(pg::Connection& conn) override;
  Result<bool> Step(pg::Connection& conn) override;

 private:
  // Reads the transforms' names into the failure counters.
  Status ReadTransformNames(pg::Connection& conn);

  // Transforms whose pages were skipped because a rebuild's range held them,
  // and until when to keep skipping.
  std::map<int, std::chrono::steady_clock::time_point> busy_;
  // When the transforms' names (for the failure counters) were last read.
  std::chrono::steady_clock::time_point names_read_{};
  // Every unit of work goes through the executor; failures it cannot cure
  // by retrying go to the charging policy.
  std::unique_ptr<ChargingHook> charging_;
  UnitExecutor executor_;
  SelfCheckRunner self_check_;
  StageOwnWritesFn stage_own_writes_;
};

}  // namespace trellis::drain
