// The statements a group plan runs, rendered from its shape (spec/engine.md,
// "Aggregates"): recompute a set of groups from the source, fold captured
// changes into per-group deltas, and apply deltas to the target. Pure text;
// the plan prepares them once per plan version.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "plan/aggregates/rules.h"

namespace trellis::plan::aggregates {

// The hidden key column of a transform without GROUP BY: always true, so the
// one row has a key to be upserted on (and to be named by in pages).
inline constexpr std::string_view kWholeTableKey = "__trellis_all";

// A GROUP BY expression and the target column that holds it.
struct GroupKey {
  std::string column;  // unquoted
  std::string expr;    // over a source row
  // False when the key can never be NULL (a NOT NULL column): its matches
  // are then a plain `=`, which the planner can hash-join and merge-join;
  // the NULL-safe form cannot be, and costs a nested loop over the target
  // (measured in bench/group_bench.cc).
  bool nullable = true;
};

// What the statements are rendered from: a group transform as bound from the
// catalog.
struct GroupShape {
  std::string target;                // quoted, qualified
  std::string source;                // quoted, qualified
  std::string alias;                 // unquoted qualifier of the source in expressions
  std::optional<std::string> where;  // over a source row
  std::vector<GroupKey> keys;        // empty: one row over the whole table
  std::vector<AggregateInput> aggregates;
};

// The state columns of every aggregate, in target order (each aggregate's
// visible column, then its hidden ones), then the hidden row count.
std::vector<StateColumn> StateColumns(const GroupShape& shape);

// Equality of the key columns of two relations: `=` for a key that cannot
// be NULL, else NULL-safe, `(r = l OR (r IS NULL AND l IS NULL))`. The OR
// form joins two relations only by a nested loop over both (PostgreSQL can
// neither hash nor index it): use it on small sets, and match large ones
// with `=` plus a branch for NULL keys, as RecomputeGroupsSql does.
// `left`/`right` are SQL for each key: the relations' qualified columns, or
// a key expression; `nullable` says which keys may be NULL (all, when empty).
std::string KeysMatch(const std::vector<std::string>& left, const std::vector<std::string>& right,
                      const std::vector<bool>& nullable = {});

// The name of the i-th (from 1) key column of a `dirty` relation.
std::string DirtyKeyColumn(std::size_t i);

// The groups' fresh rows: a SELECT of the key columns and every state
// column's recompute over the source rows that pass the WHERE and
// `filter` (SQL over a source row; empty for none), grouped by the keys. A
// transform without GROUP BY gets its one row, also over no rows.
std::string FreshGroupsSql(const GroupShape& shape, std::string_view filter);

// The quoted names of StateColumns(shape), in order.
std::vector<std::string> StateColumnNames(const GroupShape& shape);

// An upsert of the CTE `fresh` (as FreshGroupsSql gives it) into the target
// on its key, rewriting a group only when a value changed (no dead tuples,
// no trigger churn downstream).
std::string UpsertFreshSql(const GroupShape& shape);

// Recomputes the groups whose keys `dirty` lists (a relation with one column
// per key, named DirtyKeyColumn(1), ...; names no expression can mean):
// upserts those that have rows and deletes those that lost their last row.
// Correct for every aggregate, in any order, any number of times: the path
// for drains, rebuilds and corrections. Returns one row (written, deleted).
// A transform without GROUP BY upserts its one row when `dirty` lists
// anything (always, when `dirty` is empty), so a missing row is made again.
// `record`, when not empty, is a data-modifying statement run as one more
// CTE of the same statement, hence in the snapshot the recompute reads: the
// delta path records that snapshot there (spec/engine.md "Deltas").
std::string RecomputeGroupsSql(const GroupShape& shape, std::string_view dirty,
                               std::string_view record = "");

// Recomputes every group: upserts each group the source has, deletes every
// target row whose group is gone. A rebuild (after a TRUNCATE, a RESUME, an
// ALTER). Returns one row (written, deleted). `record` as above.
std::string RecomputeAllGroupsSql(const GroupShape& shape, std::string_view record = "");

// Folds the change rows of `changes` (relation `ch`: sign, the key
// columns, and the arguments as named by each AggregateInput's
// change_argument) into one delta row per group.
std::string FoldChangesSql(const GroupShape& shape, std::string_view changes);

// Applies the delta rows of `deltas` (a relation or a parenthesized query
// with FoldChangesSql's columns; `(<FoldChangesSql>)` folds and applies in
// one statement) to the target, as ONE statement over one pre-image: update
// the groups that exist, insert the new ones, delete those whose row count
// and every count and running sum reach 0 (never the one row of a
// transform without GROUP BY, as SQL says), three disjoint sets. A min/max
// (or recomputed) column is recomputed from the source only for the groups
// a change could move it in, in one pass over those groups' rows. Groups
// are matched by `=` on their keys (indexable), those with a NULL key by a
// branch of their own. Changes of one group may be applied in any order: a
// group whose row count is 0 while other state is not is in the middle of
// out-of-order changes, and stays until the rest arrive. Returns one row
// (written, deleted), as RecomputeGroupsSql does.
std::string ApplyDeltasSql(const GroupShape& shape, std::string_view deltas);

// When the group's maintenance recomputes exactly one column, a min or max
// whose argument and grouping are columns: the columns an index should lead
// with (the group's, then the argument) so that the recompute reads one
// index entry per group. Empty otherwise.
std::vector<std::string> LoneExtremeIndexColumns(const GroupShape& shape);

}  // namespace trellis::plan::aggregates
