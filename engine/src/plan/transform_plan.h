// The plan of one transform: everything the workers need to maintain its
// target, bound from the catalog rows (the binder step of a SQL engine) and
// rendered once. Workers (staging, drain, first build, rebuild) are
// kind-agnostic callers of this interface; a transform kind is one subclass
// in its own file (projection_plan.h now; group and join plans next), bound
// by Bind() (bind.h), the only place that looks at the kind.
//
// Direction: plan/ sits below drain/ and staging/ and calls no worker; it
// reads nothing from the database itself. Statements are text with numbered
// parameters; callers run them prepared (pg::Connection::QueryPrepared), so a
// plan version's statements are parsed and planned once per connection.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/ast.h"
#include "pg/connection.h"
#include "trellis/status.h"

namespace trellis::plan {

// One column of the target's key: its name in the target, its type, and the
// expression over the FROM clause that computes it.
struct KeyColumn {
  std::string name;
  std::string type;  // format_type() text, used for casts from text
  std::string expr;  // SQL over the FROM clause's aliases
  // Whether the key may be NULL (a group key may; a primary key may not).
  // Key matching is NULL-safe either way (see KeyEquals in plan_sql.h).
  bool nullable = false;
};

// A key range of the target key, (lo, hi]: each bound a key as a text[]
// literal in key-column order; nullopt is unbounded.
struct KeyRange {
  std::optional<std::string> lo;
  std::optional<std::string> hi;
};

// A rendered statement and the parameters it takes, in order.
struct Bound {
  std::string text;
  pg::Params params;
};

// The dirty-key SQL of one input table: a SELECT over the CTE `consumed`
// (capture rows: id, source_id, op, routing) yielding
// (transform_id int, key text[]) for every target key the rows may change.
struct DirtyKeys {
  int source_id = 0;
  std::string sql;
};

// A statement with a name, for golden tests and docs.
struct NamedStatement {
  std::string name;
  std::string text;
};

// Checks row expressions with PostgreSQL at define time: `exprs` and `where`
// are SQL over the FROM clause `from`; each must parse, type-check and be a
// function of one row of the inputs (no volatile function, aggregate,
// window function or subquery). Returns each expression's type
// (format_type text), or a validation error naming the transform.
// statements/expression_check.h implements it; define hands it to the plan.
// Views, not copies: an expression or a WHERE may be a megabyte, and every
// copy counts in the port's peak memory (bench/README.md, "Memory of a
// large statement"). They point into the plan, valid for the call.
using ExpressionCheck = std::function<Result<std::vector<std::string>>(
    std::string_view from, const std::vector<std::string_view>& exprs,
    std::optional<std::string_view> where)>;

class TransformPlan {
 public:
  virtual ~TransformPlan() = default;

  // "projection", later "group_by", "join".
  virtual std::string_view kind() const = 0;
  int transform_id() const { return transform_id_; }
  // The transform's name (its target's unqualified name).
  const std::string& name() const { return name_; }
  // The quoted, qualified target table.
  const std::string& target() const { return target_; }
  const std::vector<KeyColumn>& target_key() const { return key_; }

  // The FROM clause every statement reads the inputs through.
  virtual std::string FromClause() const = 0;
  // Staging: one entry per input table.
  virtual std::vector<DirtyKeys> DirtyKeySql() const = 0;

  // Recomputes the keys of the ledger pages whose ids are $1 (bigint[]).
  // Returns one row: (written, deleted).
  virtual std::string RecomputePagesSql() const = 0;
  // Recomputes the keys given explicitly as $1, a 2-D text[] (one row per
  // key, in key-column order). Returns (written, deleted).
  virtual std::string RecomputeKeysSql() const = 0;
  // Recomputes every key in `range`; `only_columns`, when set, limits the
  // update of existing rows to those columns (a column rebuild). Returns
  // (written, deleted).
  virtual Bound RecomputeRange(
      const KeyRange& range, const std::optional<std::vector<std::string>>& only_columns) const = 0;
  // The first build's form: appends the range's rows to a target that holds
  // none of them and has no key yet. Its affected count is the rows written.
  virtual Bound AppendRange(const KeyRange& range) const = 0;
  // Makes the target's key, ending a first build.
  virtual std::string AddKeySql() const = 0;

  // Ranges over the target key.
  // The key `offset` keys past `after` (nullopt: from the start), as text[];
  // no row when fewer remain.
  virtual Bound KeyAfter(const std::optional<std::string>& after, long offset) const = 0;
  // The key in the middle of `range`, as text[]; no row when the range holds
  // fewer than two keys (it cannot be cut).
  virtual Bound MiddleKey(const KeyRange& range) const = 0;
  // At most `count` keys that cut the input into ranges of about equal size,
  // from a TABLESAMPLE of `percent` of its pages keeping every
  // `per_boundary`-th sampled row, as text[] in key order.
  virtual Bound SampleBoundaries(double percent, long per_boundary, long count) const = 0;
  // Whether a first build or rebuild is cut into key ranges of about equal
  // size (SampleBoundaries). A kind whose build is one statement over the
  // whole input (a GROUP BY: ranges of group keys could not use an index)
  // says no, and may still give SampleBoundaries to self-check's sample mode.
  virtual bool BuildsByRanges() const { return true; }
  // One row: the estimated number of target keys (free when the input has
  // been analysed, else a count).
  virtual std::string EstimateKeysSql() const = 0;

  // Failure charging (drain/quarantine.h): one row for the one target key
  // $1 (text[]): the key as the plan renders it (text[]), and the input
  // values it is computed from (jsonb: column -> value). Empty when the
  // kind cannot say; failing rows are then recorded without their inputs.
  virtual std::string KeyInputsSql() const { return {}; }

  // The fresh recompute of the whole definition: the rows the target must
  // hold, with the target's column names (tests, self-check, docs).
  virtual std::string DefinitionQuerySql() const = 0;

  // Define time (spec/engine.md "Define"). Define binds the plan from the
  // draft rows BindDefinition made (bind.h; nothing is stored yet) and, in
  // its transaction with the inputs locked, runs the plan's checks, then
  // creates the target.
  // The checks of this kind that need the database: its expressions (through
  // `check`) and anything else about the inputs. A refusal is a validation
  // (or unsupported) error naming the problem and the fix; nothing has been
  // created when it returns.
  virtual Status CheckDefinition(pg::Connection& conn, const ExpressionCheck& check) const = 0;
  // ALTER ADD COLUMN and ALTER COLUMN: checks `item` as a column of this
  // kind's target (a projection: a row expression over the FROM clause) and
  // returns the type the target column takes.
  virtual Result<std::string> CheckColumn(pg::Connection& conn, const ExpressionCheck& check,
                                          const grammar::SelectItem& item) const = 0;
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

  // Staging of the delta path (spec/engine.md "Deltas"): a SELECT over the
  // CTE `consumed` (capture rows: id, source_id, op, xid, routing, width)
  // yielding (transform_id int, key text[], sign smallint, xid xid8,
  // row_values text[]), one row per captured row version, for a plan whose
  // changes travel as delta rows now; empty otherwise (its pages carry keys
  // only, from DirtyKeySql).
  virtual std::string DeltaRowsSql() const { return {}; }

  // The drain of ledger pages $1 (bigint[]): statements run in order in one
  // transaction, each taking $1 only; the rows each affects are the work
  // done. By default the recompute of the pages' keys.
  virtual std::vector<std::string> ApplyPagesSql() const { return {RecomputePagesSql()}; }

  // Every statement this plan renders, named, including each range variant:
  // what the golden tests compare.
  virtual std::vector<NamedStatement> Statements() const = 0;

 protected:
  TransformPlan(int transform_id, std::string name, std::string target, std::vector<KeyColumn> key)
      : transform_id_(transform_id),
        name_(std::move(name)),
        target_(std::move(target)),
        key_(std::move(key)) {}

 private:
  int transform_id_;
  std::string name_;
  std::string target_;
  std::vector<KeyColumn> key_;
};

}  // namespace trellis::plan
