// Runs self-check jobs (spec/engine.md "Self-check") inside a drain worker,
// one step at a time, so the worker keeps heartbeating (its heartbeat is the
// job's lease) and keeps draining between steps:
//   claim   a queued job, or one whose worker is gone;
//   compare the target with its definition range by range, each range in
//           one snapshot, through the UnitExecutor (full mode), or sample
//           keys of the target and of the definition (sample mode);
//   settle  re-check every key that differed, each in a snapshot where no
//           work that may change it is pending, until none is pending or
//           the settle bound passes; a key that still differs then is a
//           divergence;
//   finish  the report, with the transform's open drain failures.
// A transform of several stages (catalog/composite.h) is checked part by
// part, each stage against its own definition in stage order and then the
// transform the user named, into one report: a stage kept wrong would be
// invisible from the last part alone, whose definition reads the stage.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "catalog/model.h"
#include "drain/self_check_compare.h"
#include "drain/self_check_jobs.h"
#include "drain/self_check_unit.h"
#include "drain/unit_executor.h"
#include "plan/transform_plan.h"

namespace trellis::drain {

// Keys per compared range: each range is one statement and one commit of
// progress.
inline constexpr long kSelfCheckRangeKeys = 20000;
// Divergences listed in a report; the count stays exact past it.
inline constexpr size_t kSelfCheckReportLimit = 100;
// How long the settle step waits for the work pending on a key.
inline constexpr auto kSelfCheckSettleBound = std::chrono::seconds(60);

class SelfCheckRunner {
 public:
  explicit SelfCheckRunner(std::string worker_id) : worker_id_(std::move(worker_id)) {}

  // One step of self-check work, if there is any. True when it did work.
  // REQUIRES: outside a transaction.
  Result<bool> Step(pg::Connection& conn, const std::string& schema, UnitExecutor& executor);

 private:
  struct Active {
    ClaimedSelfCheck job;
    catalog::Transform owner;              // the transform the job names
    catalog::Transform transform;          // the part being checked now
    std::vector<catalog::Transform> next;  // the parts after it, the owner last
    std::unique_ptr<plan::TransformPlan> plan;
    std::unique_ptr<SelfCheckStatements> statements;
    std::optional<std::string> cursor;  // compared through this key
    bool compared = false;              // every range (or the sample) is done
    SelfCheckFindings findings;         // of the part being checked
    // What the parts checked before it left unsettled or failed to compare.
    int64_t unsettled = 0;
    std::vector<std::string> failed_ranges;
    int64_t rows = 0;
    SelfCheckReport report;
    std::chrono::steady_clock::time_point settle_deadline;
    std::chrono::steady_clock::time_point next_settle;
  };

  Result<bool> Claim(pg::Connection& conn, const std::string& schema);
  // Starts comparing `part` (a stage of the job's transform, or the
  // transform itself) from its first key.
  Status BeginPart(const std::string& schema, catalog::Transform part);
  Result<bool> CompareRange(pg::Connection& conn, const std::string& schema,
                            UnitExecutor& executor);
  Result<bool> Sample(pg::Connection& conn, const std::string& schema);
  Result<bool> Settle(pg::Connection& conn, const std::string& schema);
  Status Finish(pg::Connection& conn, const std::string& schema);
  Status Fail(pg::Connection& conn, const std::string& schema, const std::string& error);
  // Records `rows` compared; false (and the job dropped) when it was lost.
  Result<bool> Progress(pg::Connection& conn, const std::string& schema, int64_t rows);

  std::string worker_id_;
  std::optional<Active> active_;
  std::chrono::steady_clock::time_point next_claim_;
};

}  // namespace trellis::drain
