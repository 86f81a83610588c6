// The plan of a FULL JOIN that no later join narrows (spec/engine.md
// "FULL JOIN"): `FROM a FULL JOIN b ON a.x = b.y [LEFT JOIN ...]`. No input
// is in every target row, so no input's key can be the unit. The unit is
// the join value instead: coalesce(a.x, b.y) for each equality, a column of
// the target (named "a.x=b.y") that leads its key, followed by a's key, b's
// key and the key of every later input that repeats. Every target row has
// exactly one join value, and the rows under one value are exactly what the
// join of a's rows with that value and b's rows with that value gives (a
// NULL value matches nothing, so its rows are those with a NULL in a join
// column, each unmatched). Changes of a and b give their join values
// directly (routed in capture); a later input reaches them through its path
// to a or b. A recompute restricts a and b to the units' values before the
// FULL JOIN, so it reads those rows by their join-column indexes.
#pragma once

#include "plan/fan_out_join_plan.h"

namespace trellis::plan {

class FullJoinPlan final : public FanOutJoinPlan {
 public:
  FullJoinPlan(const catalog::Transform& t, const std::string& schema);

  // Define time (JoinPlan::CompleteDraft, when no input is preserved):
  // `drafted` keyed by the join value. Refuses any other place of the FULL
  // JOIN (not the first join, or followed by another FULL JOIN), naming
  // what to write instead, and an input whose key the target needs and
  // lacks.
  static Result<catalog::Transform> Draft(pg::Connection& conn, const grammar::TransformStmt& stmt,
                                          catalog::Transform drafted);

  catalog::TransformKind kind() const override { return catalog::TransformKind::kFullOuterJoin; }
  std::vector<DirtyKeys> DirtyKeySql() const override;
  Result<std::vector<std::vector<std::string>>> RoutedColumns(pg::Connection&) const override;
  // One build statement over the whole join: ranges of a join value would
  // scan both tables once each.
  const RangePlan* Ranges() const override { return nullptr; }
  // Every join value of a, b and the target: a failing rebuild goes by
  // join values, so the one that fails is charged and the others written.
  std::string EveryUnitKeySql() const override;
  // Join values sampled from a's side.
  Bound SampleBoundaries(double percent, long per_boundary, long count) const override;
  // A failing unit is recorded without its inputs: they are the rows of two
  // tables with one join value, not one row.
  std::string KeyInputsSql() const override { return {}; }

 protected:
  std::string UnitRows() const override;
  // Each side is restricted to the units behind a fence (kRestricted).
  std::string UnitMatch() const override { return "true"; }
  // A rebuild's delete: target rows whose key the join no longer computes,
  // found by one hashed anti-join on the key's text (the correlated lookup
  // of each row would read the FULL JOIN once per target row).
  std::string TargetRowGone() const override;

 private:
  // `input` (a or b) restricted to the units' join values: its rows whose
  // join columns `columns` equal a unit's values, and those with a NULL in
  // one that equal a unit NULL-safely, under its own alias.
  std::string RestrictedToUnits(const catalog::Input& input,
                                const std::vector<std::string>& columns) const;
  // The join value's text form over `input`'s join columns (a's or b's),
  // cast to the key's types: the unit a change of that side reaches.
  std::string JoinValueText(const catalog::Input& input,
                            const std::vector<std::string>& columns) const;
};

}  // namespace trellis::plan
