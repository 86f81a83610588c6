// The plan of a join: the FROM table joined many-to-one (INNER or LEFT) to
// tables reached by equality on a unique key of each (spec/engine.md
// "Joins"). The target is keyed by the FROM table's key and holds one row
// per FROM row that the joins and the WHERE keep, so every statement is the
// projection's with the parenthesised join as its FROM clause
// (`(orders AS o JOIN customers AS c ON o.customer_id = c.id LEFT JOIN ...)`
// is valid wherever a table is). What a join adds is one dirty-keys path per
// joined input: a captured row of a joined table reaches the keys of the
// root rows that join to it, through its join columns (routed in its capture
// rows) and the joins from the root to the table it joins (join_tree.h).
// Here the root is the FROM table; a join of any other shape is a
// FanOutJoinPlan (fan_out_join_plan.h), which is this plan over another
// root and a wider target key.
#pragma once

#include <string>
#include <vector>

#include "plan/projection_plan.h"

namespace trellis::plan {

class JoinPlan : public ProjectionPlan {
 public:
  JoinPlan(const catalog::Transform& t, const std::string& schema);

  // Define time (BindDefinition): the projection's draft over the FROM table
  // (`inputs.front()`), with one input per join (`inputs[i]` is the table
  // of `stmt.joins[i - 1]`), each naming the input it joins and the columns
  // of both sides.
  static Result<catalog::Transform> Draft(const grammar::TransformStmt& stmt,
                                          const std::vector<capture::ResolvedTable>& inputs);

  catalog::TransformKind kind() const override { return catalog::TransformKind::kJoin; }
  std::string FromClause() const override;
  std::vector<DirtyKeys> DirtyKeySql() const override;
  Status CheckDefinition(pg::Connection& conn, const ExpressionCheck& check) const override;
  // The shape of the joins, read with the server (join_tree.h): when the
  // FROM table is the root and no input repeats under it, the draft as it
  // is (this kind); otherwise a fan-out join's draft (fan_out_join_plan.h).
  Result<std::optional<catalog::Transform>> CompleteDraft(
      pg::Connection& conn, const grammar::TransformStmt& stmt,
      const std::vector<capture::ResolvedTable>& inputs) const override;
  // Each input but the root routes the columns that match it with its
  // neighbour toward the root, when they are not its key.
  Result<std::vector<std::vector<std::string>>> RoutedColumns(pg::Connection&) const override;
  // Two lookups per joined input: the table it joins, by that side's join
  // columns (role "join_from": which FROM keys a joined row's change
  // reaches), and the joined table by its own join columns (role
  // "join_joined": every recompute; its unique index closes it until
  // someone drops that index).
  Result<std::vector<SourceIndexGapStatus>> SourceIndexGaps(
      pg::Connection& conn, const catalog::Transform& t) const override;

 protected:
  // A join whose units are the rows of input `root`, keyed by `unit`, the
  // first columns of `target_key`, and whose builds cut `range` (the root's
  // key) into ranges (fan_out_join_plan.h).
  JoinPlan(const catalog::Transform& t, const std::string& schema, size_t root,
           std::vector<KeyColumn> target_key, std::vector<KeyColumn> unit,
           std::vector<KeyColumn> range);

  // The dirty keys of input `i`'s captured rows: `key_text` (the text form
  // of a unit key over the path's aliases) of every row of the tree path
  // from input `start` to `i`'s neighbour toward it, all inner joins, that
  // matches one of the rows' versions on the columns pairing `i` with that
  // neighbour.
  // With `own_key`, the key of the captured row itself is there too, as
  // __trellis_j.__trellis_own1.. (text) for `key_text` to use.
  DirtyKeys DirtyKeysThrough(size_t start, size_t i, const std::string& key_text,
                             bool own_key = false) const;
  const std::vector<catalog::Input>& inputs() const { return inputs_; }
  size_t root() const { return root_; }

 private:
  std::vector<catalog::Input> inputs_;
  size_t root_;       // the input whose rows are the units (join_tree.h)
  std::string from_;  // the parenthesised join
};

// The FROM clause of the inputs, joined as the definition joins them.
// `items[i]`, when given and not empty, stands for input i's
// `table AS alias` (a derived table under the same alias).
std::string JoinedFrom(const std::vector<catalog::Input>& inputs,
                       const std::vector<std::string>& items = {});

}  // namespace trellis::plan
