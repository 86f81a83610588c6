// A range unit: one job of a build (catalog/jobs.h), a key range of a
// transform's target, appended (a first build's range) or recomputed in
// place (a rebuild's, optionally of some columns). A failing range is cut
// at its middle key while the executor narrows a data error; its failing
// parts become jobs of their own that wait for a retry. A kind built as
// one range (a GROUP BY) has no middle key: its failing rebuild is cut into
// its unit keys instead (plan::BuildPlan::EveryUnitKeySql), narrowed as a
// drain's batch is, so a group that fails is charged (quarantined or held)
// and every other group written; a first build is not cut.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "catalog/jobs.h"
#include "drain/unit.h"
#include "plan/transform_plan.h"

namespace trellis::drain {

class RangeUnit final : public Unit {
 public:
  // `schema` is the catalog schema.
  RangeUnit(const plan::TransformPlan& plan, std::string schema, catalog::RangeJob job)
      : plan_(plan), schema_(std::move(schema)), job_(std::move(job)) {}

  // "build_range" or "rebuild" (a column rebuild too): as status and the
  // drain_failures table name the work.
  std::string_view kind() const override {
    return job_.kind == catalog::JobKind::kBuildRange ? "build_range" : "rebuild";
  }
  std::string Describe() const override;
  Result<long> Apply(pg::Connection& conn) override;
  Result<std::vector<std::unique_ptr<Unit>>> Split(pg::Connection& conn) override;
  Status Complete(pg::Connection& conn) override;
  Status Defer(pg::Connection& conn, const std::vector<const Unit*>& failed,
               const Status& error) override;
  Result<std::optional<std::string>> OneKey(pg::Connection& conn) const override;
  std::unique_ptr<Unit> Rebound(const plan::TransformPlan& plan) const override {
    return std::make_unique<RangeUnit>(plan, schema_, job_);
  }

 private:
  plan::KeyRange range() const { return plan::KeyRange{job_.lo, job_.hi}; }
  // Parts of a range no key range can cut: its unit keys, halved.
  Result<std::vector<std::unique_ptr<Unit>>> SplitByUnitKeys(pg::Connection& conn);
  // A part of this unit: the same job, over `part` of its range.
  std::unique_ptr<RangeUnit> Part(plan::KeyRange part) const;

  const plan::TransformPlan& plan_;
  std::string schema_;
  catalog::RangeJob job_;
};

}  // namespace trellis::drain
