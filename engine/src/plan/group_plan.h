// The plan of a GROUP BY transform (issue 11; spec/engine.md "Aggregates"):
// one target row per group of the source rows that pass the WHERE, keyed by
// the group expressions under a UNIQUE NULLS NOT DISTINCT constraint. Also
// SELECT DISTINCT (a group per distinct row, kept with a hidden row count)
// and aggregates without GROUP BY (one row over the whole table, present
// with count 0 when the table is empty, as SQL says; its key is a hidden
// constant column).
//
// Maintenance is by group: staging turns each captured row version into
// the key of its group (old and new versions of an UPDATE both, so a row
// moving between groups dirties both), and a drain recomputes the dirty
// groups from the source. Correct for every aggregate, in any order and
// any number of times, which is what lets the drain, rebuilds and the
// first build share the projection's machinery unchanged.
#pragma once

#include <map>
#include <optional>
#include <vector>

#include "capture/sources.h"
#include "catalog/model.h"
#include "grammar/ast.h"
#include "plan/aggregates/group_sql.h"
#include "plan/group_deltas.h"
#include "plan/template.h"
#include "plan/transform_plan.h"
#include "trellis/status.h"

namespace trellis::plan {

// The fillfactor of a group target (CreateTargetSql).
inline constexpr int kTargetFillfactor = 90;

class GroupPlan final : public TransformPlan {
 public:
  catalog::TransformKind kind() const override { return catalog::TransformKind::kGroupBy; }

  // Fails (internal) when the catalog rows do not make a group transform
  // (a stored definition that does not parse, a routed column missing from
  // the source's layout): define never stores such rows.
  static Result<std::unique_ptr<TransformPlan>> Bind(const catalog::Transform& t,
                                                     const std::string& schema);

  // Define time (plan::BindDefinition): the draft catalog rows of a grouping
  // statement over `inputs` (the FROM table). The keys are the SELECT items
  // that are not aggregates (every item of a SELECT DISTINCT; the hidden
  // constant `__trellis_all` without GROUP BY); the columns are the
  // aggregates, in SELECT order at ordinals 1..n, then their hidden state
  // columns and the hidden row count. Refuses, without the database, names
  // the engine keeps for itself and a non-aggregate item without GROUP BY.
  static Result<catalog::Transform> Draft(const grammar::TransformStmt& stmt,
                                          const std::vector<capture::ResolvedTable>& inputs);
  // The same for ALTER: aggregates named in `ordinals` keep their ordinal
  // (their hidden columns keep their names), new ones are numbered from
  // `next_ordinal`, and hidden columns follow. `argument_types` (by column
  // name, ArgumentTypes) are recorded for the sums and avgs they name and
  // decide their hidden state (aggregates::SumKind); define and ALTER draft
  // again with them once the definition is checked.
  static Result<catalog::Transform> Draft(const grammar::TransformStmt& stmt,
                                          const std::vector<capture::ResolvedTable>& inputs,
                                          const std::map<std::string, int>& ordinals,
                                          int next_ordinal,
                                          const std::map<std::string, std::string>& argument_types);
  // The types of the sum and avg arguments, as the server types them over
  // the source (format_type with its typmod), by column name.
  // REQUIRES: CheckDefinition passed; inside a transaction.
  Result<std::map<std::string, std::string>> ArgumentTypes(pg::Connection& conn) const;

  // DefinePlan
  // PostgreSQL 15 or later; the grouped query as the server groups it
  // (aggregate/group_check.h); every per-row expression through `check`;
  // the group expressions read a column.
  Status CheckDefinition(pg::Connection& conn, const ExpressionCheck& check) const override;
  // The draft again with the sum and avg argument types (ArgumentTypes),
  // which decide each one's hidden state (aggregates::SumKind).
  Result<std::optional<catalog::Transform>> CompleteDraft(
      pg::Connection& conn, const grammar::TransformStmt& stmt,
      const std::vector<capture::ResolvedTable>& inputs) const override;
  // A group plan records its build's snapshot under the transform's id.
  bool BuildsFromStoredRows() const override { return true; }
  // CREATE TABLE ... AS the groups' recompute WITH NO DATA: the keys, each
  // aggregate with its hidden state, the hidden row count, typed as
  // PostgreSQL types them.
  std::string CreateTargetSql() const override;
  // The source columns the group expressions, the aggregate arguments and
  // the WHERE read: staging evaluates the group expressions over them to
  // find each change's groups, and a drain the rest to apply its deltas.
  Result<std::vector<std::vector<std::string>>> RoutedColumns(pg::Connection& conn) const override;
  bool RoutesValues() const override { return true; }

  // AlterPlan (group_alter.cc): a column of a group target is an aggregate
  // with hidden state columns beside it, so adding, dropping or changing
  // one adds, drops or replaces those too; the group keys are fixed (a new
  // key regroups every row, which is a new transform). Over a join, ADD and
  // ALTER COLUMN first make the hidden join carry what the new aggregate
  // reads (group_alter_over_join.h); DROP COLUMN leaves the join's columns
  // as they are (another aggregate may read them, and the group's capture
  // may route them).
  // Before the catalog lock: for a grouped join, the tables of its ALTER
  // (LockGroupedJoinTables); then, when `adds`, the lock routing a new
  // column needs: SHARE ROW EXCLUSIVE on the source when the input takes
  // deltas (it waits for writers in flight and holds new ones until the
  // ALTER commits, as define's does), then the staging fence
  // (catalog/locks.h), so that every capture row and delta row staged
  // without the new column is from a writer the ALTER's rebuild sees. Taken
  // whether or not the column needs routing: which columns it reads is known
  // only once the statement is checked, under the catalog lock. Then ACCESS
  // EXCLUSIVE on the target, which the ALTER changes: waited for under the
  // catalog lock, it deadlocked with a drain holding the target and waiting
  // for the transform's catalog row (seen in group_by/differential_test.exs).
  Status LockForAlter(pg::Connection& conn, const std::string& schema, const catalog::Transform& t,
                      bool adds) const override;
  // ADD COLUMN <aggregate> AS name: the column and its state, filled by a
  // rebuild.
  Status AddColumn(pg::Connection& conn, const std::string& schema, const catalog::Transform& t,
                   const grammar::SelectItem& column) const override;
  // DROP COLUMN name: the aggregate and its hidden state columns.
  Status DropColumn(pg::Connection& conn, const std::string& schema, const catalog::Transform& t,
                    const std::string& column) const override;
  // ALTER COLUMN name AS <aggregate>: the new aggregate in the same place,
  // its state replaced, refilled by a rebuild.
  Status AlterColumn(pg::Connection& conn, const std::string& schema, const catalog::Transform& t,
                     const grammar::SelectItem& column) const override;

  // CheckPlan
  // A group's source rows are looked up by its GROUP BY values (every
  // recompute of a dirty group): a gap (role "group_by") when the planner
  // cannot serve that lookup with an index (none for aggregates over the
  // whole table).
  Result<std::vector<SourceIndexGapStatus>> SourceIndexGaps(
      pg::Connection& conn, const catalog::Transform& t) const override;
  // Delta rows while the transform can take deltas (delta_ready()).
  std::string DeltaRowsSql() const override;
  std::string UnfoldedDeltaRowsSql() const override;
  // With deltas: apply the pages' delta rows, then recompute the pages'
  // groups that have none (or are held), a statement skipped when staging
  // found delta rows for every key and no group is held. Otherwise the
  // recompute of them all.
  std::vector<PagesStatement> ApplyPagesSql() const override;

  std::string FromClause() const override;
  std::vector<DirtyKeys> DirtyKeySql() const override;
  std::string RecomputePagesSql() const override;
  std::string RecomputeKeysSql() const override;
  // Group transforms are built and rebuilt as one range (one GROUP BY over
  // the source, which PostgreSQL parallelises itself; Ranges() is null):
  // `range` is always unbounded. `only_columns` is ignored: a group's
  // columns are recomputed together.
  Bound RecomputeRange(const KeyRange& range,
                       const std::optional<std::vector<std::string>>& only_columns) const override;
  Bound AppendRange(const KeyRange& range) const override;
  std::string AddKeySql() const override;
  // The group keys of a TABLESAMPLE BERNOULLI of the source rows that pass
  // the WHERE, distinct, in text[] order: self-check's sample of the
  // definition side (builds do not use it).
  Bound SampleBoundaries(double percent, long per_boundary, long count) const override;
  std::string EstimateKeysSql() const override;
  // Every group of the source and of the target: a failing rebuild goes by
  // groups, so one failing group is quarantined and the others written.
  std::string EveryUnitKeySql() const override;
  // A failing group is recorded by its key: the input values are the key's
  // values by target column (a group has many rows; its key names them).
  std::string KeyInputsSql() const override;
  std::string DefinitionQuerySql() const override;
  std::vector<NamedStatement> Statements() const override;

  // The shape the statements are rendered from (tests, source index gaps).
  const aggregates::GroupShape& shape() const { return shape_; }
  // True for aggregates without GROUP BY: one row over the whole table.
  bool whole_table() const { return whole_table_; }
  // True when the transform's changes travel as delta rows now
  // (spec/engine.md "Deltas"): its input routes every value a delta needs
  // and every aggregate column is live (one in quarantine or paused is
  // written by recomputes only).
  bool delta_ready() const { return delta_ready_; }

 private:
  GroupPlan(const catalog::Transform& t, const std::string& schema, std::vector<KeyColumn> key);

  // The recompute of the groups listed by `keys_from` (a FROM list whose
  // rows carry the keys as text in k.c1..cn), recording its snapshot for
  // those groups when the transform may take deltas.
  std::string RecomputeKeysFrom(const std::string& keys_from) const;
  // The record of a recompute's snapshot for the groups whose keys `keys`
  // lists (text[] of key texts; "NULL" for every group), or "" when no
  // delta can be staged for the transform (no record is needed).
  std::string Record(const std::string& keys, const std::string& when = "") const;
  // Binds the delta path from the catalog rows, after the shape.
  void BindDeltas(const catalog::Transform& t, const std::string& schema);

  std::string schema_;
  grammar::TransformStmt stmt_;  // the stored definition, parsed
  int source_id_ = 0;
  std::string source_table_;  // quoted, qualified
  std::string alias_;         // unquoted
  bool whole_table_ = false;
  aggregates::GroupShape shape_;
  // The definition's visible columns, as the definition query names them.
  std::vector<std::string> visible_;
  // A grouped join's definition query over the base tables
  // (plan/group_over_join.h), when it has one.
  std::optional<std::string> definition_over_join_;
  // The source columns the group expressions read, and their 1-based
  // positions in the source's routing layout.
  std::vector<std::string> routed_columns_;
  std::vector<size_t> routed_positions_;
  // The delta path (group_deltas.h): whether the input routes every value,
  // whether deltas are staged now, and what their statements need.
  bool routes_values_ = false;
  bool delta_ready_ = false;
  DeltaInputs deltas_;
};

// The name of the hidden key column of a transform without GROUP BY.
inline constexpr std::string_view kWholeTableKey = aggregates::kWholeTableKey;

// The prefix of the hidden state columns of the aggregate column with
// catalog ordinal `ordinal`: "__trellis_<ordinal>_" (short, and unique in
// the target at any column name length).
std::string StatePrefix(int ordinal);

}  // namespace trellis::plan
