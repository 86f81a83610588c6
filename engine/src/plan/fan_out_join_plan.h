// The plan of a join of any shape other than the many-to-one one
// (spec/engine.md "Joins of every shape"): one-to-many and many-to-many
// sides, RIGHT and FULL joins, and joins whose units are the rows of an
// input other than the FROM table. The joins form a tree (join_tree.h);
// the root, chosen at define, is an input whose row every target row holds,
// and the target key is the root's key followed by the key of each input
// whose rows may repeat under one root row (nullable for an outer side,
// kept by UNIQUE NULLS NOT DISTINCT). The unit of maintenance is a root row:
// pages carry root keys, and a recompute replaces every target row under a
// root key with the rows the join computes for it now. Everything else is
// the join plan's, over that root: one dirty-keys path per input to the
// root, routed columns, index gaps, ranges of the root key.
#pragma once

#include <vector>

#include "plan/join_plan.h"
#include "plan/join_tree.h"

namespace trellis::plan {

// Keys `t` (a join's draft of `stmt`) by `leading` and then the key of each
// input of `keyed`, in that order, and makes its columns the SELECT items
// that name no key column. A SELECT item that is nothing but a reference to
// a key column names that key column; a key column no item names is named
// "alias.column" (HiddenColumnName). Refuses a name two columns would share.
Status KeyJoinTarget(const grammar::TransformStmt& stmt, catalog::Transform& t,
                     std::vector<catalog::KeyColumn> leading, const std::vector<size_t>& keyed);

class FanOutJoinPlan : public JoinPlan {
 public:
  FanOutJoinPlan(const catalog::Transform& t, const std::string& schema);

  // Define time (JoinPlan::CompleteDraft): `drafted` (the join's draft of
  // `stmt`) keyed as `shape` says (KeyJoinTarget).
  static Result<catalog::Transform> Draft(const grammar::TransformStmt& stmt,
                                          catalog::Transform drafted, const JoinShape& shape);

  catalog::TransformKind kind() const override { return catalog::TransformKind::kFanOutJoin; }
  // The shape was chosen when this draft was made.
  Result<std::optional<catalog::Transform>> CompleteDraft(
      pg::Connection&, const grammar::TransformStmt&,
      const std::vector<capture::ResolvedTable>&) const override {
    return std::optional<catalog::Transform>();
  }
  std::string AddKeySql() const override;
  // The root row of the unit: what a failing unit is computed from first.
  std::string KeyInputsSql() const override;

 protected:
  // A fan-out join whose units are the first `unit_width` columns of its
  // target key, rows of input `root` (full_join_plan.h).
  FanOutJoinPlan(const catalog::Transform& t, const std::string& schema, size_t root,
                 size_t unit_width);

  std::string RecomputeKeysFrom(const std::string& keys_from) const override;
  // A FROM list of the rows under the units of the CTE __trellis_units
  // (columns __k1..__kn, typed): the join, joined to the units on the
  // root's key.
  virtual std::string UnitRows() const;
};

}  // namespace trellis::plan
