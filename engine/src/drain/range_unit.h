// Range units: a key range of a transform's target, appended (a first
// build's range, a row of the jobs table) or recomputed in place (a rebuild
// chunk, optionally of some columns). A failing range is cut at its middle
// key while the executor narrows a data error.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "drain/unit.h"
#include "plan/transform_plan.h"

namespace trellis::drain {

class RangeUnit final : public Unit {
 public:
  enum class Mode { kAppend, kRecompute };

  // A first build's range: job `job_id` of the jobs table, tried `attempts`
  // times before.
  static std::unique_ptr<RangeUnit> BuildRange(const plan::TransformPlan& plan, std::string schema,
                                               std::string job_id, int attempts,
                                               plan::KeyRange range);
  // A rebuild chunk: the range recomputed in place; `columns` limits it to
  // those columns.
  static std::unique_ptr<RangeUnit> RebuildChunk(const plan::TransformPlan& plan,
                                                 plan::KeyRange range,
                                                 std::optional<std::vector<std::string>> columns);

  std::string_view kind() const override {
    return mode_ == Mode::kAppend ? "build_range" : "rebuild";
  }
  std::string Describe() const override;
  Result<long> Apply(pg::Connection& conn) override;
  Result<std::vector<std::unique_ptr<Unit>>> Split(pg::Connection& conn) override;
  Status Complete(pg::Connection& conn) override;
  Status Defer(pg::Connection& conn, const std::vector<const Unit*>& failed,
               const Status& error) override;

  const plan::KeyRange& range() const { return range_; }

 private:
  RangeUnit(const plan::TransformPlan& plan, Mode mode, plan::KeyRange range)
      : plan_(plan), mode_(mode), range_(std::move(range)) {}
  std::unique_ptr<RangeUnit> Part(plan::KeyRange range) const;

  const plan::TransformPlan& plan_;
  Mode mode_;
  plan::KeyRange range_;
  std::optional<std::vector<std::string>> columns_;  // kRecompute only
  std::string schema_;                               // kAppend only
  std::string job_id_;                               // kAppend only
  int attempts_ = 0;                                 // kAppend only
};

}  // namespace trellis::drain
