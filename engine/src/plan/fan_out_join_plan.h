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
//
// Side units (catalog step 19): when one input alone repeats under the
// root (`customers c LEFT JOIN orders o`), a unit is the whole target key,
// (root key, that input's key), and covers the target rows under its root
// whose side key is its own or NULL (the root's NULL-extended row, which a
// side row's coming or going may make or remove). A unit whose side key is
// NULL is the whole root, as before. A change of the side input, or of an
// input joined below it, dirties only the rows it is part of: an order's
// update recomputes that order's row, not each of its customer's orders
// (bench/README.md, "Joins of every shape").
#pragma once

#include <optional>
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
  std::vector<DirtyKeys> DirtyKeySql() const override;
  // Root keys, as units (a side unit's side key NULL: the whole root).
  Bound SampleUnitKeys(double percent, long count) const override;
  std::string UnitCovers(const std::vector<std::string>& row,
                         const std::vector<std::string>& unit) const override;
  // Side units of one root share its NULL-extended row: they are bucketed,
  // and so drained, by their root.
  size_t LockWidth() const override { return range_key().size(); }
  // Side units of one root share its NULL-extended row.
  std::string UnitsOverlap(const std::vector<std::string>& a,
                           const std::vector<std::string>& b) const override;

 protected:
  // A fan-out join whose units are the first `unit_width` columns of its
  // target key, rows of input `root` (full_join_plan.h).
  FanOutJoinPlan(const catalog::Transform& t, const std::string& schema, size_t root,
                 size_t unit_width, size_t range_width);

  std::string RecomputeKeysFrom(const std::string& keys_from) const override;
  // A FROM list of the rows under the units of the CTE __trellis_units
  // (columns __k1..__kn, typed): the join, joined to the units on the
  // root's key.
  virtual std::string UnitRows() const;
  // The condition, over a row of UnitRows, that selects it: the WHERE is
  // asked only where it holds (a WHERE that fails on another unit's row
  // must not fail this one). "true" when UnitRows yields only the units'
  // rows before any WHERE can see them.
  virtual std::string UnitMatch() const;

 private:
  // The recompute of side units (RecomputeKeysFrom).
  std::string RecomputeSideUnitsFrom(const std::string& keys_from) const;
  // The condition, over the join's row, that the side input is NULL there.
  std::string SideMissing() const;
  // The side part of a unit-key-ordered list: its columns after the root's.
  template <typename T>
  std::vector<T> SidePart(const std::vector<T>& all) const {
    return std::vector<T>(all.begin() + static_cast<std::ptrdiff_t>(range_key().size()), all.end());
  }
  template <typename T>
  std::vector<T> RootPart(const std::vector<T>& all) const {
    return std::vector<T>(all.begin(),
                          all.begin() + static_cast<std::ptrdiff_t>(range_key().size()));
  }

  // The one input repeating under the root, when units are side units.
  std::optional<size_t> side_;
};

}  // namespace trellis::plan
