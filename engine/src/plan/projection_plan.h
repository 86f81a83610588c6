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

// True when `expr` is nothing but a reference to `column` (bare, quoted, or
// qualified by `qualifier`): a SELECT item that merely repeats a key
// column, which the target carries anyway.
bool IsColumnReference(const std::string& expr, const std::string& column,
                       const std::string& qualifier);

class ProjectionPlan : public TransformPlan, public RangePlan {
 public:
  // `schema` is the catalog schema (the ledger's pages table lives there).
  ProjectionPlan(const catalog::Transform& t, const std::string& schema);

  // Define time (BindDefinition): the draft rows of a projection over
  // `inputs.front()`. Refuses a source without a primary key (it keys the
  // target) and a SELECT item that gives a key column's name to anything but
  // that column.
  static Result<catalog::Transform> Draft(const grammar::TransformStmt& stmt,
                                          const std::vector<capture::ResolvedTable>& inputs);

  catalog::TransformKind kind() const override { return catalog::TransformKind::kProjection; }

  // MaintainPlan
  std::string FromClause() const override;
  std::vector<DirtyKeys> DirtyKeySql() const override;
  std::string RecomputePagesSql() const override;
  std::string RecomputeKeysSql() const override;
  std::string KeyInputsSql() const override;

  // BuildPlan, by ranges of the source key
  Bound RebuildWhole() const override;
  Bound RecomputeRange(const KeyRange& range,
                       const std::optional<std::vector<std::string>>& only_columns) const override;
  Bound AppendRange(const KeyRange& range) const override;
  std::string AddKeySql() const override;
  Bound SampleBoundaries(double percent, long per_boundary, long count) const override;
  std::string EstimateKeysSql() const override;
  // Ranges of the range key (range_key()), unless one of its columns may be
  // NULL (a key taken from a target keyed UNIQUE NULLS NOT DISTINCT): a
  // range (lo, hi] holds no NULL, so such a plan builds as one range.
  const RangePlan* Ranges() const override;
  Bound KeyAfter(const std::optional<std::string>& after, long offset) const override;
  Bound MiddleKey(const KeyRange& range) const override;

  // CheckPlan
  std::string DefinitionQuerySql() const override;

  // DefinePlan
  Status CheckDefinition(pg::Connection& conn, const ExpressionCheck& check) const override;
  std::string CreateTargetSql() const override;

  // AlterPlan (projection_alter.cc): a column is a row expression over the
  // FROM clause, checked by CheckColumn.
  Status AddColumn(pg::Connection& conn, const std::string& schema, const catalog::Transform& t,
                   const grammar::SelectItem& column) const override;
  Status DropColumn(pg::Connection& conn, const std::string& schema, const catalog::Transform& t,
                    const std::string& column) const override;
  Status AlterColumn(pg::Connection& conn, const std::string& schema, const catalog::Transform& t,
                     const grammar::SelectItem& column) const override;
  // Checks `item` as a column of this target: a row expression over the
  // FROM clause, through `check`. Returns the type the column takes.
  Result<std::string> CheckColumn(pg::Connection& conn, const ExpressionCheck& check,
                                  const grammar::SelectItem& item) const;

  std::vector<NamedStatement> Statements() const override;

 protected:
  // A plan whose units are the rows of `root` (an input of `t`): its key is
  // `unit` (nullopt: the target key), the first columns of `target_key`;
  // builds cut `range` (nullopt: the unit key) into ranges, the root's key
  // when units are finer than root rows (fan_out_join_plan.h). The FROM
  // table and its key, for the public constructor.
  ProjectionPlan(const catalog::Transform& t, const std::string& schema, const catalog::Input& root,
                 std::vector<KeyColumn> target_key, std::optional<std::vector<KeyColumn>> unit,
                 std::optional<std::vector<KeyColumn>> range = std::nullopt);

  // The key builds cut into ranges, and samples and size estimates count:
  // the first columns of the target key, over the root's rows.
  const std::vector<KeyColumn>& range_key() const { return range_key_; }

  // The slots every template may use.
  Slots BaseSlots() const;
  // The dirty keys of the root's own captured rows: its key, the first
  // routing values of every row version, followed by `null_padding` NULLs
  // (a unit wider than the root's key, fan_out_join_plan.h).
  DirtyKeys RootKeys(size_t null_padding) const;
  // The recompute of the unit keys read from `keys_from` (a FROM list whose
  // rows carry the keys as text in k.c1..cn, sql::KeyRows): what
  // RecomputePagesSql and RecomputeKeysSql run. One target row per unit
  // here; a kind whose unit selects many rows renders its own.
  virtual std::string RecomputeKeysFrom(const std::string& keys_from) const;
  // The key and value columns as "expr AS name", in target column order.
  std::string NamedValues() const;
  // The condition, over the target row aliased __trellis_t, that the
  // definition no longer computes it: a range recompute deletes such rows.
  // A correlated lookup of its key by default.
  virtual std::string TargetRowGone() const;
  const std::string& schema() const { return schema_; }
  const std::vector<std::string>& quoted_columns() const { return columns_; }
  const std::string& where() const { return where_; }
  const std::string& root_table() const { return source_table_; }
  const std::string& root_alias() const { return alias_; }

 private:
  std::string schema_;
  std::vector<KeyColumn> range_key_;
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
