// The plan of one transform: everything the engine needs to define,
// maintain, build, check and alter it, bound from the catalog rows (the
// binder step of a SQL engine) and rendered once. A transform kind is one
// class in its own file, bound by Bind() (bind.h), the only place that
// decides by kind; everything else asks the plan and never which kind it is.
//
// The interface is split by audience, one small abstract class each, so a
// kind implements what it does and no more:
//   MaintainPlan  staging and the drain of ledger pages
//   BuildPlan     first builds and rebuilds (and, when the kind cuts its key
//                 into ranges, RangePlan)
//   CheckPlan     self-check and status: the definition query, the source
//                 indexes the maintenance wants
//   DefinePlan    define: checks with the database, the completed draft, the
//                 target, the columns capture routes
//   AlterPlan     ALTER TRANSFORM ... ADD / DROP / ALTER COLUMN
// TransformPlan is all of them over one target: what Bind() returns.
//
// Direction: plan/ sits below drain/, staging/, statements/ and reads/ and
// calls none of them. Maintenance statements are text with numbered
// parameters, rendered without the database; callers run them prepared
// (pg::Connection::QueryPrepared), so a plan version's statements are parsed
// and planned once per connection. Only the define, alter and check
// audiences take a connection, for what only the server knows.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "capture/sources.h"
#include "catalog/model.h"
#include "catalog/transform_kind.h"
#include "grammar/ast.h"
#include "pg/connection.h"
#include "plan/plan_types.h"
#include "trellis/status.h"
#include "trellis/types.h"

namespace trellis::plan {

// The target a plan writes. Every audience names it.
class PlanTarget {
 public:
  virtual ~PlanTarget() = default;
  virtual int transform_id() const = 0;
  // The transform's name (its target's unqualified name).
  virtual const std::string& name() const = 0;
  // The quoted, qualified target table.
  virtual const std::string& target() const = 0;
  // The target's row key: one row per value of it.
  virtual const std::vector<KeyColumn>& target_key() const = 0;
  // The unit key (spec/engine.md "Unit keys"): the key one unit of
  // maintenance recomputes, which pages, held keys, quarantine records and
  // self-check's candidates carry, in the text form of sql/key_text.h. Each
  // of its columns is a column of the target's key (`name`) computed over
  // the FROM clause (`expr`), so the target rows under a unit are the rows
  // whose columns hold the unit's values, and one unit may select many
  // target rows (a one-to-many join keyed by (c.id, o.id) whose unit is
  // c.id). The recompute of a unit replaces every target row under it. For
  // a kind with one target row per unit (every kind today) it is the
  // target key itself, the default.
  virtual const std::vector<KeyColumn>& unit_key() const { return target_key(); }
};

// Staging and the drain of ledger pages (spec/engine.md "Staging", "Drain").
class MaintainPlan : public virtual PlanTarget {
 public:
  // The FROM clause every statement reads the inputs through.
  virtual std::string FromClause() const = 0;
  // Staging: one entry per input table, yielding unit keys.
  virtual std::vector<DirtyKeys> DirtyKeySql() const = 0;
  // Staging of the delta path (spec/engine.md "Deltas"): a SELECT over the
  // CTE `consumed` (capture rows: id, source_id, op, xid, routing, width)
  // yielding (transform_id int, key text[], sign smallint, xid xid8,
  // row_values text[]), one row per captured row version, for a plan whose
  // changes travel as delta rows now; empty otherwise (its pages carry keys
  // only, from DirtyKeySql).
  // A plan may fold them (one row per key, writer and sign, `folded`
  // true: plan/group_deltas.h); each row also carries `folded` (boolean).
  virtual std::string DeltaRowsSql() const { return {}; }
  // The same rows unfolded, one per row version (`folded` false): what
  // staging falls back to for a batch whose fold fails for a captured row
  // (staging/failing_readers.h), so the drain meets the failure as it did
  // before folding (charging). DeltaRowsSql when the plan does not fold.
  virtual std::string UnfoldedDeltaRowsSql() const { return DeltaRowsSql(); }

  // Recomputes the unit keys of the ledger pages whose ids are $1
  // (bigint[]): every target row under each unit is replaced by the rows
  // the unit computes now (none: its rows are deleted). A kind with one row
  // per unit does it as an upsert of the row that is kept and a delete of
  // the one that is not, leaving unchanged rows unwritten. Returns one row:
  // (written, deleted).
  virtual std::string RecomputePagesSql() const = 0;
  // Recomputes the unit keys given explicitly as $1, a 2-D text[] (one row
  // per key, in key-column order: sql::KeyRowsLiteral), the same way.
  // Returns (written, deleted).
  virtual std::string RecomputeKeysSql() const = 0;
  // The drain of ledger pages $1 (bigint[]): statements run in order in one
  // transaction, each taking $1 only; the rows each affects are the work
  // done. By default the recompute of the pages' keys.
  virtual std::vector<PagesStatement> ApplyPagesSql() const {
    return {PagesStatement{RecomputePagesSql(), {}}};
  }

  // How many leading values of a unit key two units that may cover one
  // target row have in common (UnitsOverlap): staging buckets units by
  // those values, so that a drain never recomputes two of them side by side
  // (staging/ledger_pages.h). The whole unit key by default: only equal
  // units overlap.
  virtual size_t LockWidth() const { return unit_key().size(); }

  // Failure charging (drain/quarantine.h): one row for the one unit key
  // $1 (text[]): the key as the plan renders it (text[]), and the input
  // values it is computed from (jsonb: column -> value). Empty when the
  // kind cannot say; failing rows are then recorded without their inputs.
  virtual std::string KeyInputsSql() const { return {}; }
};

// Cutting the target key into ranges, for a kind whose builds run as many
// ranges side by side, and whose failing ranges are halved.
class RangePlan {
 public:
  virtual ~RangePlan() = default;
  // The key `offset` keys past `after` (nullopt: from the start), as text[];
  // no row when fewer remain.
  virtual Bound KeyAfter(const std::optional<std::string>& after, long offset) const = 0;
  // The key in the middle of `range`, as text[]; no row when the range holds
  // fewer than two keys (it cannot be cut).
  virtual Bound MiddleKey(const KeyRange& range) const = 0;
};

// First builds and rebuilds (drain/build_step.h, drain/range_unit.h).
class BuildPlan : public virtual PlanTarget {
 public:
  // Recomputes every key in `range`; `only_columns`, when set, limits the
  // update of existing rows to those columns (a column rebuild). Returns
  // (written, deleted).
  virtual Bound RecomputeRange(
      const KeyRange& range, const std::optional<std::vector<std::string>>& only_columns) const = 0;
  // The whole target recomputed in one statement that writes only the
  // difference (plan/batch_paths.h RebuildTargetSql). Returns (written,
  // deleted). By default the recompute of the unbounded range.
  virtual Bound RebuildWhole() const { return RecomputeRange(KeyRange{}, std::nullopt); }
  // The first build's form: appends the range's rows to a target that holds
  // none of them and has no key yet. Its affected count is the rows written.
  virtual Bound AppendRange(const KeyRange& range) const = 0;
  // Makes the target's key, ending a first build.
  virtual std::string AddKeySql() const = 0;
  // One row: the estimated number of target keys (free when the input has
  // been analysed, else a count).
  virtual std::string EstimateKeysSql() const = 0;
  // At most `count` keys that cut the input into ranges of about equal size,
  // from a TABLESAMPLE of `percent` of its pages keeping every
  // `per_boundary`-th sampled row, as text[] in key order: a build's range
  // bounds, and self-check's sample of the definition side.
  virtual Bound SampleBoundaries(double percent, long per_boundary, long count) const = 0;
  // The key ranges of a kind that builds by ranges; null for a kind whose
  // build is one statement over the whole input (a GROUP BY: ranges of
  // group keys could not use an index), which is then one range, never cut.
  virtual const RangePlan* Ranges() const { return nullptr; }
  // For a kind built as one range: every unit key the target holds or its
  // input makes now (each once, a key literal per row), so a rebuild that
  // fails for one unit can be narrowed to it key by key as a drain's batch
  // is (drain/range_unit.h). Empty when the kind offers none: its failing
  // rebuild waits for a retry whole.
  virtual std::string EveryUnitKeySql() const { return {}; }
};

// Self-check and status (drain/self_check_*.h, reads/status.h).
class CheckPlan : public virtual PlanTarget {
 public:
  // The fresh recompute of the whole definition: the rows the target must
  // hold, with the target's column names (tests, self-check, docs).
  virtual std::string DefinitionQuerySql() const = 0;
  // The source indexes this plan's maintenance wants and lacks, each with
  // the CREATE INDEX that closes it (status/2, and self-check's refusal),
  // read fresh from the database. `t` is the rows the plan was bound from.
  // None by default.
  virtual Result<std::vector<SourceIndexGapStatus>> SourceIndexGaps(
      pg::Connection&, const catalog::Transform&) const {
    return std::vector<SourceIndexGapStatus>{};
  }
};

// Define (spec/engine.md "Define"). Define binds the plan from the draft
// rows BindDefinition made (bind.h; nothing is stored yet) and, in its
// transaction with the inputs locked, runs the plan's checks, completes the
// draft, then creates the target and routes capture.
class DefinePlan : public virtual PlanTarget {
 public:
  // The checks of this kind that need the database: its expressions (through
  // `check`) and anything else about the inputs. A refusal is a validation
  // (or unsupported) error naming the problem and the fix; nothing has been
  // created when it returns.
  virtual Status CheckDefinition(pg::Connection& conn, const ExpressionCheck& check) const = 0;
  // After CheckDefinition passed: the draft of `stmt` over `inputs` again,
  // with what only the server knows (a group's sum and avg argument types,
  // which decide their hidden state), to store and bind instead; nullopt
  // when the draft is complete as it was.
  virtual Result<std::optional<catalog::Transform>> CompleteDraft(
      pg::Connection&, const grammar::TransformStmt&,
      const std::vector<capture::ResolvedTable>&) const {
    return std::optional<catalog::Transform>();
  }
  // CREATE TABLE of the empty target with its columns and their types (no
  // key: the first build makes it, AddKeySql()).
  virtual std::string CreateTargetSql() const = 0;
  // The source columns each input's capture rows must carry beyond the
  // source's key, input by input (a GROUP BY's group expressions read
  // them), found with the database. Define routes them through capture
  // (capture/routing.h: a source's layout is the union of its readers') and
  // stores them in transform_inputs.routed_columns. None by default.
  virtual Result<std::vector<std::vector<std::string>>> RoutedColumns(pg::Connection&) const {
    return std::vector<std::vector<std::string>>{};
  }
  // Whether RoutedColumns carry every column the plan evaluates per row,
  // not only those that find a target key: define stores it
  // (transform_inputs.routes_values), and a plan bound from inputs routed so
  // may stage its changes as delta rows.
  virtual bool RoutesValues() const { return false; }
  // Whether the first build names the stored transform (a group plan records
  // its build's snapshot under the transform's id): define binds the plan
  // again from the stored rows before it builds an empty source at once.
  virtual bool BuildsFromStoredRows() const { return false; }
};

// ALTER TRANSFORM ... ADD / DROP / ALTER COLUMN of the transform `t` this
// plan was bound from. Each REQUIRES: inside the ALTER's transaction, `t`
// locked (LockForAlter taken before); on error nothing the caller's
// rollback does not undo. `schema` is the catalog schema.
class AlterPlan : public virtual PlanTarget {
 public:
  // The locks an ALTER of this transform takes before it locks the catalog
  // row (tables before the catalog, spec/engine.md "Define", step 3);
  // `adds` when it may add or change a column. `t` is loaded unlocked.
  // None by default.
  virtual Status LockForAlter(pg::Connection&, const std::string& /*schema*/,
                              const catalog::Transform&, bool /*adds*/) const {
    return Status::OK();
  }
  virtual Status AddColumn(pg::Connection& conn, const std::string& schema,
                           const catalog::Transform& t,
                           const grammar::SelectItem& column) const = 0;
  virtual Status DropColumn(pg::Connection& conn, const std::string& schema,
                            const catalog::Transform& t, const std::string& column) const = 0;
  virtual Status AlterColumn(pg::Connection& conn, const std::string& schema,
                             const catalog::Transform& t,
                             const grammar::SelectItem& column) const = 0;
};

class TransformPlan : public MaintainPlan,
                      public BuildPlan,
                      public CheckPlan,
                      public DefinePlan,
                      public AlterPlan {
 public:
  virtual catalog::TransformKind kind() const = 0;
  int transform_id() const final { return transform_id_; }
  const std::string& name() const final { return name_; }
  const std::string& target() const final { return target_; }
  const std::vector<KeyColumn>& target_key() const final { return key_; }
  const std::vector<KeyColumn>& unit_key() const final { return unit_key_; }

  // Self-check's sample of the definition side (drain/self_check_runner.h):
  // up to `count` unit keys from a sample of `percent` of the input, as key
  // literals. By default the sampled boundaries, which are unit keys when
  // the unit is the target row; a kind whose unit selects many rows samples
  // its units here.
  virtual Bound SampleUnitKeys(double percent, long count) const {
    return SampleBoundaries(percent, 1, count);
  }

  // The condition that the target row whose unit-key columns hold `row`
  // lies under the unit whose values are `unit` (both in unit-key order).
  // Every reader asking which target rows a unit covers (self-check's
  // comparison, quarantine's count) asks here. By default the values are
  // equal (key_sql.h KeyEquals); a kind whose unit covers more renders its
  // own (a side unit, fan_out_join_plan.h).
  virtual std::string UnitCovers(const std::vector<std::string>& row,
                                 const std::vector<std::string>& unit) const;
  // The condition that units `a` and `b` may cover a target row both (a
  // pending unit's work may change a row another unit covers). By default
  // they are equal.
  virtual std::string UnitsOverlap(const std::vector<std::string>& a,
                                   const std::vector<std::string>& b) const;

  // Every statement this plan renders, named, including each range variant:
  // what the golden tests compare.
  virtual std::vector<NamedStatement> Statements() const = 0;

 protected:
  // `unit_key`: nullopt for a kind whose unit is its target row (the unit
  // key is then the target key).
  TransformPlan(int transform_id, std::string name, std::string target, std::vector<KeyColumn> key,
                std::optional<std::vector<KeyColumn>> unit_key = std::nullopt)
      : transform_id_(transform_id),
        name_(std::move(name)),
        target_(std::move(target)),
        key_(std::move(key)),
        unit_key_(unit_key ? std::move(*unit_key) : key_) {}

 private:
  int transform_id_;
  std::string name_;
  std::string target_;
  std::vector<KeyColumn> key_;
  std::vector<KeyColumn> unit_key_;
};

}  // namespace trellis::plan
