// A self-check range: one key range of a target compared with its
// definition, run through the UnitExecutor like every unit of work. It
// writes nothing: what it finds goes to the SelfCheckFindings it is given.
// A range whose recompute raises a data error (a row the definition cannot
// compute, which the drain fails on too) is cut in halves by the executor
// until the failing keys are isolated; those are recorded as ranges the
// check could not compare and charged like any unit's failure.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "drain/self_check_compare.h"
#include "drain/unit.h"

namespace trellis::drain {

struct SelfCheckFindings {
  std::set<std::string> candidates;        // unit keys whose rows differed (key literals)
  std::vector<std::string> failed_ranges;  // ranges that could not be compared
  // The target keys of the rows reported diverged: units that cover more
  // than their own rows (a side unit and its root, plan/fan_out_join_plan.h)
  // may both cover one row, which is one divergence.
  std::set<std::string> reported;
  // Logical capture: keys found different with nothing pending, waiting to
  // be judged again once the slot has staged every write their snapshot saw
  // (self_check_runner.cc Settle): the WAL position after that snapshot and
  // what both sides read then.
  struct Suspect {
    uint64_t lsn = 0;
    std::string seen;
    int confirmed = 0;  // later rounds that found the same, each after the slot caught up
  };
  std::map<std::string, Suspect> suspects;
};

class SelfCheckRangeUnit final : public Unit {
 public:
  SelfCheckRangeUnit(const plan::TransformPlan& plan, const SelfCheckStatements& statements,
                     plan::KeyRange range, SelfCheckFindings& findings)
      : plan_(plan), statements_(statements), range_(std::move(range)), findings_(findings) {}

  std::string_view kind() const override { return "self_check"; }
  std::string Describe() const override;
  Result<long> Apply(pg::Connection& conn) override;
  Result<std::vector<std::unique_ptr<Unit>>> Split(pg::Connection& conn) override;
  Status Complete(pg::Connection&) override { return Status::OK(); }
  Status Defer(pg::Connection& conn, const std::vector<const Unit*>& failed,
               const Status& error) override;

 private:
  const plan::TransformPlan& plan_;
  const SelfCheckStatements& statements_;
  plan::KeyRange range_;
  SelfCheckFindings& findings_;
};

}  // namespace trellis::drain
