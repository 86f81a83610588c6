// The plan of a projection: one input table, the target keyed by the
// input's primary key, one target row per input row that passes the WHERE.
// A join plan (join_plan.h) is this plan over a parenthesised join: every
// statement reads the inputs through FromClause().
#pragma once

#include <vector>

#include "capture/sources.h"
#include "catalog/model.h"
#include "grammar/ast.h"
#include "plan/template.h"
#include "plan/transform_plan.h"

namespace trellis::plan {

class ProjectionPlan : public TransformPlan {
 public:
  // `schema` is the catalog schema (the ledger's pages table lives there).
  ProjectionPlan(const catalog::Transform& t, const std::string& schema);

  // Define time (BindDefinition): the draft rows of a projection over
  // `inputs.front()`. Refuses a source without a primary key (it keys the
  // target) and a SELECT item that gives a key column's name to anything but
  // that column.
  static Result<catalog::Transform> Draft(const grammar::TransformStmt& stmt,
                                          const std::vector<capture::ResolvedTable>& inputs);

  std::string_view kind() const override { return "projection"; }
  std::string FromClause() const override;
  std::vector<DirtyKeys> DirtyKeySql() const override;
  std::string RecomputePagesSql() const override;
  std::string RecomputeKeysSql() const override;
  Bound RecomputeRange(const KeyRange& range,
                       const std::optional<std::vector<std::string>>& only_columns) const override;
  Bound AppendRange(const KeyRange& range) const override;
  std::string AddKeySql() const override;
  Bound KeyAfter(const std::optional<std::string>& after, long offset) const override;
  Bound MiddleKey(const KeyRange& range) const override;
  Bound SampleBoundaries(double percent, long per_boundary, long count) const override;
  std::string EstimateKeysSql() const override;
  std::string KeyInputsSql() const override;
  std::string DefinitionQuerySql() const override;
  Status CheckDefinition(pg::Connection& conn, const ExpressionCheck& check) const override;
  Result<std::string> CheckColumn(pg::Connection& conn, const ExpressionCheck& check,
                                  const grammar::SelectItem& item) const override;
  std::string CreateTargetSql() const override;
  std::vector<NamedStatement> Statements() const override;

 private:
  // The slots every template may use.
  Slots BaseSlots() const;
  std::string RecomputeKeysFrom(const std::string& keys_from) const;
  // The key and value columns as "expr AS name", in target column order.
  std::string NamedValues() const;

  std::string schema_;
  int source_id_;
  std::string source_table_;               // quoted, qualified
  std::string alias_;                      // quoted
  std::vector<std::string> column_names_;  // written value columns (plan/quarantine_sql.h)
  std::vector<std::string> columns_;       // the same, quoted
  std::vector<std::string> exprs_;         // their expressions, parenthesised
  std::string where_;                      // "(predicate)" or "true"
  bool filtered_ = false;                  // whether there is a WHERE
};

}  // namespace trellis::plan
