// The joins of a transform as a tree (spec/engine.md "Joins of every
// shape"). Each joined input is matched by column equalities with one
// input before it, so the inputs and those matches form a tree; the FROM
// clause evaluates it as written (INNER, LEFT, RIGHT, FULL), and
// maintenance walks it from one input, the root, whose rows are the units:
// every target row holds exactly one row of the root, so a recompute of a
// root key replaces the target rows it selects, and a change anywhere else
// reaches the root keys it can touch along the tree, all inner joins.
//
// Which input is the root, and which inputs' keys join the target key, is
// decided once at define (ChooseJoinShape, which asks the server which
// columns are unique) and stored as the target key: the root's key columns
// first, then the key of each input whose rows may repeat under one root row.
#pragma once

#include <string>
#include <vector>

#include "catalog/model.h"
#include "pg/connection.h"
#include "trellis/status.h"

namespace trellis::plan {

// An input's table, quoted and qualified, for statements.
std::string InputTable(const catalog::Input& input);
// The same as a user reads it in a message (quoted only where needed).
std::string InputShown(const catalog::Input& input);

// The index in `inputs` of the input with `ordinal`.
size_t IndexOfOrdinal(const std::vector<catalog::Input>& inputs, int ordinal);

// The inputs no join NULL-extends, in order: the FROM table and every
// INNER-joined input, until a RIGHT join keeps only its own table and a FULL
// join none. Only these can be the root.
std::vector<size_t> PreservedInputs(const std::vector<catalog::Input>& inputs);

// The inputs on the tree's path from `root` to `to`, both included, root
// first.
std::vector<size_t> PathBetween(const std::vector<catalog::Input>& inputs, size_t root, size_t to);

// The columns by which neighbouring inputs `near` and `far` are matched:
// `near_columns[i]` of `near` equals `far_columns[i]` of `far`.
struct JoinEdge {
  std::vector<std::string> near_columns;
  std::vector<std::string> far_columns;
};
JoinEdge EdgeBetween(const std::vector<catalog::Input>& inputs, size_t near, size_t far);

// "a.x = b.y AND ...": the equalities of joined input `joined` with the
// input it joins.
std::string JoinCondition(const std::vector<catalog::Input>& inputs, size_t joined);

// The inputs of `path` (PathBetween) as a FROM clause of inner joins, each
// on its equalities with the one before it.
std::string InnerPathFrom(const std::vector<catalog::Input>& inputs,
                          const std::vector<size_t>& path);

// Whether `columns` of `input` hold each value at most once: its key (the
// primary key, or the key a transform's target has) is among them, or a
// unique index's is (asked of the server).
Result<bool> UniqueOn(pg::Connection& conn, const catalog::Input& input,
                      const std::vector<std::string>& columns);

// The root and the inputs whose keys key the target.
struct JoinShape {
  size_t root = 0;
  // keyed[i]: input i's rows may repeat under one row of its neighbour
  // toward the root (it is not unique on the columns that match them), so
  // its key is part of the target's.
  std::vector<bool> keyed;
  size_t KeyedCount() const;
};

// Chooses the root among the preserved inputs: the one under which the
// fewest inputs repeat (ties to the earliest), reading which columns are
// unique from the server (a primary key, or a unique, valid, non-partial
// index whose key columns are all among them). A refusal names the
// transform `name` when an input whose key the target needs has none.
// REQUIRES: some input is preserved (else the join is a FULL JOIN's,
// full_join_plan.h).
Result<JoinShape> ChooseJoinShape(pg::Connection& conn, const std::string& name,
                                  const std::vector<catalog::Input>& inputs);

// The root of a stored shape: the input whose key columns are the first
// columns of `key` (catalog::Transform::key), as ChooseJoinShape stored it.
size_t StoredRoot(const std::vector<catalog::Input>& inputs,
                  const std::vector<catalog::KeyColumn>& key);

}  // namespace trellis::plan
