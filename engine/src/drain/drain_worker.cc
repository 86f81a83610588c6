#include "drain/drain_worker.h"

#include "catalog/migrations.h"
#include "catalog/transform_names.h"
#include "drain/build_job.h"
#include "drain/build_step.h"
#include "drain/drain_page.h"
#include "log/component_log.h"
#include "trellis/charging_metrics.h"
#include "trellis/engine_metrics.h"
#include "workers/progress.h"

namespace trellis::drain {
namespace {
constexpr auto kBusySkip = std::chrono::milliseconds(50);
// How often a drain worker reads the transforms' names, so the failure
// counters of a transform defined since exist (at 0) before its first
// failure can reach a scrape.
constexpr auto kNamesEvery = std::chrono::seconds(5);
}  // namespace

DrainWorker::DrainWorker(ConnectOptions options, StageOwnWritesFn stage_own_writes)
    : WorkerLoop(std::move(options), "drain", workers::MakeWorkerId("drain")),
      charging_(MakeChargingHook()),
      executor_(*charging_),
      self_check_(id()),
      stage_own_writes_(std::move(stage_own_writes)) {}

DrainWorker::~DrainWorker() { Stop(); }

Result<bool> DrainWorker::Prepare(pg::Connection& conn) {
  Status migrated = catalog::CheckMigrated(conn, options().schema);
  if (migrated.code() == Code::kNotMigrated) return false;  // wait for migrate
  if (!migrated.ok()) return migrated;
  return true;
}

Status DrainWorker::ReadTransformNames(pg::Connection& conn) {
  auto names = catalog::TransformNames(conn, options().schema);
  if (!names.ok()) return names.status();
  ChargingMetrics::Get().Know(names.value());
  return Status::OK();
}

Result<bool> DrainWorker::Step(pg::Connection& conn) {
  const auto now = std::chrono::steady_clock::now();
  if (now - names_read_ >= kNamesEvery) {
    // The counters at 0 serve the side of draining: a failure is logged and
    // draining goes on, unless the connection is gone.
    Status read = ReadTransformNames(conn);
    if (!read.ok() && conn.broken()) return read;
    if (!read.ok()) {
      log::Component("trellis::drain")
          ->warn("drain worker {}: reading the transforms failed: {}", id(), log::SafeForLog(read));
    }
    names_read_ = now;
  }
  std::set<int> skip;
  for (auto it = busy_.begin(); it != busy_.end();) {
    if (it->second <= now) {
      it = busy_.erase(it);
    } else {
      skip.insert(it->first);
      ++it;
    }
  }
  // A self-check job advances one step per loop, beside the drain, so the
  // worker keeps heartbeating (the job's lease) and draining while it runs.
  auto checked = self_check_.Step(conn, options().schema, executor_);
  if (!checked.ok()) return checked.status();
  auto page = DrainPages(conn, options().schema, skip, executor_, stage_own_writes_);
  if (!page.ok()) return page.status();
  auto& metrics = GlobalEngineMetrics();
  // Pages applied or charged: a waiter of this process looks again.
  if (page->outcome == PageOutcome::kDrained || page->outcome == PageOutcome::kFailed) {
    workers::NoteProgress();
  }
  switch (page->outcome) {
    case PageOutcome::kDrained:
      // Its target is another transform's input (the claim asked the
      // catalog, so a chain defined a moment ago counts). Its readers'
      // pages were made in the drain's transaction; or else the capture
      // rows it committed wait for staging, which starts on them now (the
      // commit notified the staging worker of other ports too).
      if (page->read_by_others && page->staged_own_writes > 0) {
        metrics.stage_writes_staged.fetch_add(static_cast<uint64_t>(page->staged_own_writes),
                                              std::memory_order_relaxed);
      } else if (page->read_by_others) {
        NudgeRole("staging");
        metrics.stage_wakes.fetch_add(1, std::memory_order_relaxed);
      }
      metrics.pages_drained.fetch_add(static_cast<uint64_t>(page->pages),
                                      std::memory_order_relaxed);
      metrics.keys_drained.fetch_add(static_cast<uint64_t>(page->keys), std::memory_order_relaxed);
      return true;
    case PageOutcome::kFailed:
      metrics.pages_failed.fetch_add(static_cast<uint64_t>(page->pages), std::memory_order_relaxed);
      return true;
    case PageOutcome::kBusy:
      busy_[page->transform_id] = now + kBusySkip;
      return true;
    case PageOutcome::kNone:
      break;
  }
  auto building = AnyBuild(conn, options().schema);
  if (!building.ok()) return building.status();
  if (!building.value()) return checked.value();
  // Ranges of builds first: any number of workers run them at once.
  auto ranged = RunOneBuildJob(conn, options().schema, executor_);
  if (!ranged.ok()) return ranged.status();
  if (ranged.value()) {
    workers::NoteProgress();
    metrics.backfill_rows.fetch_add(static_cast<uint64_t>(**ranged), std::memory_order_relaxed);
    return true;
  }
  auto stepped = AdvanceBuild(conn, options().schema, kBuildRangeRows, executor_);
  if (!stepped.ok()) return stepped.status();
  if (stepped.value()) workers::NoteProgress();
  return stepped.value() || checked.value();
}

}  // namespace trellis::drain
