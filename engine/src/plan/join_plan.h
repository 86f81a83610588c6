// The plan of a join: the FROM table joined many-to-one (INNER or LEFT) to
// tables reached by equality on a unique key of each (spec/engine.md
// "Joins"). The target is keyed by the FROM table's key and holds one row
// per FROM row that the joins and the WHERE keep, so every statement is the
// projection's with the parenthesised join as its FROM clause
// (`(orders AS o JOIN customers AS c ON o.customer_id = c.id LEFT JOIN ...)`
// is valid wherever a table is). What a join adds is one dirty-keys path per
// joined input: a captured row of a joined table reaches the FROM keys of
// the rows that join to it, through its join columns (routed in its capture
// rows) and the joins from the FROM table to the table it joins.
#pragma once

#include <string>
#include <vector>

#include "plan/projection_plan.h"

namespace trellis::plan {

class JoinPlan final : public ProjectionPlan {
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
  // The projection's checks, then each joined table's uniqueness on its join
  // columns: its primary key, or a unique, non-partial index on exactly
  // those columns. A refusal names the index that would make it valid.
  Status CheckDefinition(pg::Connection& conn, const ExpressionCheck& check) const override;
  // Each joined input routes its join columns that are not its key.
  Result<std::vector<std::vector<std::string>>> RoutedColumns(pg::Connection&) const override;
  // Two lookups per joined input: the table it joins, by that side's join
  // columns (role "join_from": which FROM keys a joined row's change
  // reaches), and the joined table by its own join columns (role
  // "join_joined": every recompute; its unique index closes it until
  // someone drops that index).
  Result<std::vector<SourceIndexGapStatus>> SourceIndexGaps(
      pg::Connection& conn, const catalog::Transform& t) const override;

 private:
  std::vector<catalog::Input> inputs_;
  std::string from_;  // the parenthesised join
};

// The FROM clause of the inputs up to and including `last` (an index into
// `inputs`), joined as the definition joins them: the whole definition's
// when `last` is the last input. With `only_path`, only the inputs on the
// way from the FROM table to `last`, all as inner joins (what a joined
// row's dirty keys are found through).
std::string JoinedFrom(const std::vector<catalog::Input>& inputs, size_t last, bool only_path);

}  // namespace trellis::plan
