#include "plan/group_plan.h"

#include <algorithm>
#include <variant>

#include "capture/routing.h"
#include "grammar/distinct_on.h"
#include "grammar/parser.h"
#include "grammar/recomputed_aggregate.h"
#include "grammar/render.h"
#include "plan/aggregate_stages.h"
#include "plan/aggregates/group_check.h"
#include "plan/group_over_join.h"
#include "plan/key_sql.h"
#include "plan/quarantine_sql.h"
#include "sql/key_text.h"
#include "sql/quote.h"

namespace trellis::plan {
namespace {

// The group keys of staged capture rows. Each row version's routed values
// are turned back into a row of the source's type (json_populate_record
// runs each column type's input function on its text), and the GROUP BY
// expressions are evaluated over it under the source's alias, inside a
// subquery of their own so that no name of the statement around them can
// capture a column reference.
constexpr std::string_view kDirtyGroups =
    R"sql(SELECT DISTINCT {transform_id} AS transform_id, __trellis_g.key
FROM consumed AS __trellis_s, {routing_rows},
LATERAL (SELECT {key_text} AS key
         FROM pg_catalog.json_populate_record(NULL::{source_table},
                pg_catalog.json_object(ARRAY[{names}]::text[], ARRAY[{values}]::text[])) AS {alias}
) AS __trellis_g
WHERE __trellis_s.source_id = {source_id} AND __trellis_s.op <> 'T')sql";

// Without GROUP BY every change dirties the one row.
constexpr std::string_view kDirtyWholeTable =
    R"sql(SELECT DISTINCT {transform_id} AS transform_id, ARRAY['true']::text[] AS key
FROM consumed AS __trellis_s
WHERE __trellis_s.source_id = {source_id} AND __trellis_s.op <> 'T')sql";

// Group keys drawn from a sample of the source's rows (self-check's sample
// mode). Row-level BERNOULLI, so that a small table still yields rows.
constexpr std::string_view kSampleGroups = R"sql(SELECT b FROM (
  SELECT b, row_number() OVER (ORDER BY b) AS n FROM (
    SELECT DISTINCT {key_text} AS b
    FROM {source_table} AS {alias} TABLESAMPLE BERNOULLI ($1::float8)
    WHERE {where}
  ) AS k
) AS s WHERE n % $2::bigint = 0 ORDER BY n LIMIT $3::bigint)sql";

// Every group the source makes now and every group the target holds, each
// once: the units a failing rebuild is narrowed over (a group the source
// no longer makes is recomputed away).
constexpr std::string_view kEveryGroup = R"sql(SELECT k::text FROM (
  SELECT {source_key} AS k FROM {source_table} AS {alias} WHERE {where}
  UNION
  SELECT {target_key} FROM {target} AS t
) AS keys ORDER BY 1)sql";

// The planner's row estimate of the source: only a progress figure here.
constexpr std::string_view kEstimateRows =
    "SELECT greatest(c.reltuples, 0)::bigint FROM pg_class c WHERE c.oid = {source}::regclass";

// The WHERE bracketed, or "true" when the statement has none.
std::string WhereOrTrue(const aggregates::GroupShape& shape) {
  return shape.where ? "(" + *shape.where + ")" : "true";
}

// The key expressions bracketed, so `::text` applies to the whole of each.
std::vector<std::string> GroupKeyExprs(const std::vector<KeyColumn>& key) {
  std::vector<std::string> out;
  for (const auto& k : key) out.push_back("(" + k.expr + ")");
  return out;
}

// A failing group's record (drain/quarantine.h): its key as given and the
// key's values by target column, which name the source rows it holds.
constexpr std::string_view kGroupInputs =
    "SELECT $1::text[], pg_catalog.jsonb_build_object({pairs})";

}  // namespace

std::string StatePrefix(int ordinal) {
  return std::string(aggregates::kHiddenPrefix) + std::to_string(ordinal) + "_";
}

GroupPlan::GroupPlan(const catalog::Transform& t, const std::string& schema,
                     std::vector<KeyColumn> key)
    : TransformPlan(t.id, t.name(), sql::Qualified(t.target_schema, t.target_name), std::move(key)),
      schema_(schema),
      source_id_(t.source.id),
      source_table_(sql::Qualified(t.source.schema_name, t.source.table_name)),
      alias_(t.source_alias) {}

Result<std::unique_ptr<TransformPlan>> GroupPlan::Bind(const catalog::Transform& t,
                                                       const std::string& schema) {
  auto parsed = grammar::Parse(t.definition);
  const auto* statement = std::get_if<grammar::Statement>(&parsed);
  const auto* stored = statement ? std::get_if<grammar::TransformStmt>(statement) : nullptr;
  if (!stored) {
    return Status::Internal("the stored definition of transform " + t.name() +
                            " is not a TRANSFORM statement");
  }
  // A grouped join groups its hidden join target, the FROM input here; a
  // DISTINCT ON is kept as its grouping (grammar/distinct_on.h).
  const grammar::TransformStmt over =
      stored->HasDistinctOn()
          ? grammar::DistinctOnAsGrouping(*stored)
          : GroupOverHidden(*stored,
                            grammar::QualifiedName{t.source.schema_name, t.source.table_name});
  const grammar::TransformStmt* stmt = &over;
  const bool whole_table = stmt->group_by.empty() && !stmt->distinct;
  std::vector<KeyColumn> key;
  for (const auto& k : t.key) key.push_back(KeyColumn{k.name, k.sql_type, k.expr, !whole_table});
  std::unique_ptr<GroupPlan> plan(new GroupPlan(t, schema, std::move(key)));
  plan->whole_table_ = whole_table;
  plan->stmt_ = *stmt;

  aggregates::GroupShape& shape = plan->shape_;
  shape.target = plan->target();
  shape.source = plan->source_table_;
  shape.alias = t.source_alias;
  shape.where = t.where_sql;
  if (!whole_table) {
    for (const auto& k : t.key) shape.keys.push_back(aggregates::GroupKey{k.name, k.expr, true});
  }
  for (const auto& k : t.key) plan->visible_.push_back(k.expr + " AS " + sql::Ident(k.name));
  // The group's key as text[], as pages and quarantined_rows hold it: over a
  // source row it is the row's group, over a group its key.
  const std::string key_text = sql::KeyText(GroupKeyExprs(plan->unit_key()));
  auto has_column = [&](const std::string& name) {
    return std::any_of(t.columns.begin(), t.columns.end(),
                       [&](const catalog::Column& c) { return c.name == name; });
  };
  for (const auto& item : stmt->select) {
    if (!item.aggregate) continue;
    auto column = std::find_if(t.columns.begin(), t.columns.end(),
                               [&](const catalog::Column& c) { return c.name == item.alias; });
    if (column == t.columns.end()) {
      return Status::Internal("transform " + t.name() + " has no catalog column " + item.alias);
    }
    // A paused column keeps what it has: no statement writes it. One in
    // quarantine is written, NULL for the groups recorded for it.
    if (!IsWritten(*column)) continue;
    plan->visible_.push_back("(" + item.expr + ") AS " + sql::Ident(item.alias));
    const std::string prefix = StatePrefix(column->ordinal);
    std::string argument = item.aggregate->argument.value_or("");
    std::string quarantined;
    if (column->state != ColumnState::kLive) {
      quarantined = IsQuarantinedKey(schema, t.id, column->name, key_text);
      // A recomputed call is guarded by its rule (it is not one expression).
      if (!argument.empty() && item.aggregate->function != grammar::AggregateFunction::kRecomputed)
        argument = "CASE WHEN " + quarantined + " THEN NULL ELSE (" + argument + ") END";
    }
    // Recomputes keep whatever hidden state define created for the column
    // (BindDeltas decides what deltas keep).
    const aggregates::SumKind kept =
        has_column(prefix + std::string(aggregates::kScalesSuffix)) ? aggregates::SumKind::kScaled
        : has_column(prefix + "sum")                                ? aggregates::SumKind::kExact
                                     : aggregates::SumKind::kRecomputed;
    shape.aggregates.push_back(aggregates::AggregateInput{
        *item.aggregate, item.alias, prefix, argument,
        std::string(aggregates::kChangeAlias) + "." + sql::Ident(prefix + "arg"), kept, quarantined,
        column->argument_type ? aggregates::FixedScaleOf(*column->argument_type) : std::nullopt});
  }

  // A grouped join's target must equal its grouping over the base tables:
  // self-check compares with that, so a wrong join target is found too.
  // Not while a column is in quarantine (its groups read NULL, which only
  // the query over the join's target says).
  if (!stored->joins.empty() &&
      std::all_of(t.columns.begin(), t.columns.end(),
                  [](const catalog::Column& c) { return c.state == ColumnState::kLive; })) {
    std::vector<std::string> names;
    for (const auto& k : t.key) names.push_back(k.name);
    for (const auto& item : stmt->select) {
      if (item.aggregate) names.push_back(item.alias);
    }
    plan->definition_over_join_ =
        DefinitionOverJoinSql(*stored, names, std::string(kWholeTableKey));
  }

  const catalog::Input& input = t.inputs.front();
  const auto& layout = input.source.routing_columns;
  for (const auto& column : input.routed_columns) {
    auto at = std::find(layout.begin(), layout.end(), column);
    if (at == layout.end()) {
      return Status::Internal("column " + column + " read by transform " + t.name() +
                              " is not in the routing layout of its source");
    }
    plan->routed_columns_.push_back(column);
    plan->routed_positions_.push_back(static_cast<size_t>(at - layout.begin()) + 1);
  }
  // A draft (define time, t.id 0) has its routed columns found later.
  if (!whole_table && plan->routed_columns_.empty() && t.id != 0) {
    return Status::Internal("transform " + t.name() + " routes no source column");
  }
  plan->BindDeltas(t, schema);
  return std::unique_ptr<TransformPlan>(std::move(plan));
}

void GroupPlan::BindDeltas(const catalog::Transform& t, const std::string& schema) {
  const catalog::Input& input = t.inputs.front();
  routes_values_ = input.routes_values && t.id != 0;
  // Partitioned and inherited sources too: staging recomputes, instead of
  // taking as deltas, the writes naming a relation no longer under the
  // source (capture/relations.h CapturedUnderSourceSql).
  delta_ready_ = routes_values_;
  for (const auto& c : t.columns) {
    if (c.role == catalog::ColumnRole::kAggregate && c.state != ColumnState::kLive) {
      delta_ready_ = false;
    }
  }
  deltas_.schema = schema;
  deltas_.transform_id = t.id;
  deltas_.source_id = source_id_;
  deltas_.routed_columns = routed_columns_;
  deltas_.routed_positions = routed_positions_;
  deltas_.shape = shape_;
  // A sum or avg is kept by deltas as its argument's type says
  // (aggregates::SumKindOf), when define created the hidden state that
  // needs. A column defined before catalog step 11 has no recorded type: its
  // running sum is exact where its own type is bigint (an integer
  // argument); the others are recomputed per changed group, as they were.
  for (auto& a : deltas_.shape.aggregates) {
    if (a.sum == aggregates::SumKind::kRecomputed) continue;
    auto visible = std::find_if(t.columns.begin(), t.columns.end(),
                                [&](const catalog::Column& c) { return c.name == a.column; });
    auto sum = std::find_if(t.columns.begin(), t.columns.end(), [&](const catalog::Column& c) {
      return c.name == a.state_prefix + "sum";
    });
    aggregates::SumKind wanted = aggregates::SumKind::kRecomputed;
    if (visible != t.columns.end() && visible->argument_type) {
      wanted = aggregates::SumKindOf(*visible->argument_type);
    } else if (sum != t.columns.end() && sum->sql_type == "bigint") {
      wanted = aggregates::SumKind::kExact;
    }
    // kScaled needs its counts per scale; kExact a running sum (both kinds
    // have one, see Bind).
    if (wanted == aggregates::SumKind::kScaled && a.sum != aggregates::SumKind::kScaled) {
      wanted = aggregates::SumKind::kRecomputed;
    }
    a.sum = wanted;
  }
}

Result<std::map<std::string, std::string>> GroupPlan::ArgumentTypes(pg::Connection& conn) const {
  std::map<std::string, std::string> out;
  for (const auto& a : shape_.aggregates) {
    const auto fn = a.call.function;
    if (!a.call.argument ||
        (fn != grammar::AggregateFunction::kSum && fn != grammar::AggregateFunction::kAvg)) {
      continue;
    }
    auto type = aggregates::AggregateType(conn, name(), FromClause(), *a.call.argument);
    if (!type.ok()) return type.status();
    out[a.column] = type.value();
  }
  return out;
}

Result<std::optional<catalog::Transform>> GroupPlan::CompleteDraft(
    pg::Connection& conn, const grammar::TransformStmt& stmt,
    const std::vector<capture::ResolvedTable>& inputs) const {
  auto types = ArgumentTypes(conn);
  if (!types.ok()) return types.status();
  auto typed = Draft(stmt, inputs, {}, 1, types.value());
  if (!typed.ok()) return typed.status();
  return std::optional<catalog::Transform>(std::move(typed.value()));
}

Result<catalog::Transform> GroupPlan::Draft(const grammar::TransformStmt& stmt,
                                            const std::vector<capture::ResolvedTable>& inputs) {
  return Draft(stmt, inputs, {}, 1, {});
}

Result<catalog::Transform> GroupPlan::Draft(
    const grammar::TransformStmt& stmt, const std::vector<capture::ResolvedTable>& inputs,
    const std::map<std::string, int>& ordinals, int next_ordinal,
    const std::map<std::string, std::string>& argument_types) {
  // A DISTINCT ON is drafted as its grouping, its definition as written;
  // its ORDER BY must end in the source's key (grammar/distinct_on.h).
  if (stmt.HasDistinctOn()) {
    if (auto refusal = grammar::DistinctOnTieRefusal(stmt, inputs.front().key_columns)) {
      return Status::Unsupported("transform " + grammar::RenderName(stmt.target.name) +
                                 " is not supported: " + *refusal);
    }
    auto drafted =
        Draft(grammar::DistinctOnAsGrouping(stmt), inputs, ordinals, next_ordinal, argument_types);
    if (drafted.ok()) drafted->definition = grammar::Render(stmt);
    return drafted;
  }
  // A grouped join is drafted over its hidden join target (inputs.front()).
  if (!stmt.joins.empty()) {
    return Draft(GroupOverHidden(stmt, grammar::QualifiedName{inputs.front().schema_name,
                                                              inputs.front().table_name}),
                 inputs, ordinals, next_ordinal, argument_types);
  }
  const std::string& name = stmt.target.name;
  const std::string hidden(aggregates::kHiddenPrefix);
  const std::string qualifier = stmt.source.Qualifier();
  if (qualifier.rfind(hidden, 0) == 0) {
    return aggregates::Refusal(name, "the alias " + sql::Ident(qualifier) + " starts with " +
                                         hidden +
                                         ", which Trellis keeps for its own names; choose another");
  }
  const bool whole_table = stmt.group_by.empty() && !stmt.distinct;
  const capture::ResolvedTable& source = inputs.front();
  catalog::Transform t;
  t.target_schema = stmt.target.schema.value_or("");
  t.target_name = name;
  t.kind = catalog::TransformKind::kGroupBy;
  t.definition = grammar::Render(stmt);
  t.where_sql = stmt.where;
  t.key_indexed = false;
  t.source_index_optional = stmt.without_source_index;
  t.source = capture::DraftSource(source);
  t.source_alias = qualifier;
  catalog::Input from;  // ordinal 1, role kFrom: the FROM table, joined to nothing
  from.source = t.source;
  from.alias = qualifier;
  t.inputs.push_back(std::move(from));

  aggregates::GroupShape shape;
  for (const auto& item : stmt.select) {
    // A hidden grouping names its aggregate columns so (aggregate_stages.h);
    // its name says it is one, since no user's transform may start so.
    const bool compiled_column =
        name.rfind(kHiddenGroupPrefix, 0) == 0 && IsAggregateColumnName(item.alias);
    if (item.alias.rfind(hidden, 0) == 0 && !compiled_column) {
      return aggregates::Refusal(name, "the column name " + sql::Ident(item.alias) +
                                           " starts with " + hidden +
                                           ", which Trellis keeps for its hidden columns; choose "
                                           "another name");
    }
    if (item.aggregate && !stmt.distinct) {
      auto known = ordinals.find(item.alias);
      const int ordinal = known != ordinals.end() ? known->second : next_ordinal++;
      catalog::Column column;
      column.name = item.alias;
      column.expr = item.expr;
      column.role = catalog::ColumnRole::kAggregate;
      column.ordinal = ordinal;
      auto typed = argument_types.find(item.alias);
      if (typed != argument_types.end()) column.argument_type = typed->second;
      t.columns.push_back(std::move(column));
      const std::string prefix = StatePrefix(ordinal);
      // Running sums are kept for every sum and avg, and a numeric's counts
      // per display scale; the delta path decides from the argument's type
      // what deltas keep (BindDeltas).
      const bool scaled = typed != argument_types.end() &&
                          aggregates::SumKindOf(typed->second) == aggregates::SumKind::kScaled;
      shape.aggregates.push_back(aggregates::AggregateInput{
          *item.aggregate,
          item.alias,
          prefix,
          item.aggregate->argument.value_or(""),
          std::string(aggregates::kChangeAlias) + "." + sql::Ident(prefix + "arg"),
          scaled ? aggregates::SumKind::kScaled : aggregates::SumKind::kExact,
          {},
          scaled ? aggregates::FixedScaleOf(typed->second) : std::nullopt});
    } else if (whole_table) {
      return aggregates::Refusal(
          name, "the column " + sql::Ident(item.alias) +
                    " is not an aggregate, and without GROUP BY every column is one; add GROUP "
                    "BY " +
                    item.expr + " for a row per value");
    } else {
      t.key.push_back(catalog::KeyColumn{item.alias, item.expr, ""});
    }
  }
  if (whole_table)
    t.key.push_back(catalog::KeyColumn{std::string(kWholeTableKey), "true", "boolean"});
  // The hidden state after every ordinal in use.
  int next = next_ordinal;
  for (const auto& c : t.columns) next = std::max(next, c.ordinal + 1);
  for (const auto& c : aggregates::StateColumns(shape)) {
    if (!ordinals.empty() && c.name == aggregates::kRowCountColumn) continue;  // ALTER: kept
    if (std::any_of(t.columns.begin(), t.columns.end(),
                    [&](const catalog::Column& v) { return v.name == c.name; })) {
      continue;
    }
    catalog::Column column;
    column.name = c.name;
    column.expr = c.Recompute();
    column.role = catalog::ColumnRole::kHidden;
    column.ordinal = next++;
    t.columns.push_back(std::move(column));
  }
  return t;
}

Status GroupPlan::CheckDefinition(pg::Connection& conn, const ExpressionCheck& check) const {
  auto version = conn.Query("SELECT current_setting('server_version_num')::int >= 150000");
  if (!version.ok()) return version.status();
  if (version->text(0, 0) != "t") {
    return Status::Unsupported(
        "GROUP BY, SELECT DISTINCT and aggregate transforms need PostgreSQL 15 or later (their "
        "targets are keyed by UNIQUE NULLS NOT DISTINCT, so that a NULL group is one group); "
        "upgrade the server or define a projection");
  }
  // The grouped query first: an item that is an aggregate Trellis does not
  // maintain (string_agg) is named as such, not as a per-row expression.
  TRELLIS_RETURN_IF_ERROR(aggregates::CheckGroupedQuery(conn, stmt_, FromClause()));
  // A DISTINCT ON column is the first element of an array_agg, which over
  // an array value would be an element of it (PostgreSQL's arrays of
  // arrays are one array of more dimensions).
  for (const auto& item : stmt_.select) {
    if (!item.aggregate || item.aggregate->name != grammar::kFirstByOrder) continue;
    const std::string value = grammar::RowExpressions(*item.aggregate).front();
    auto type = aggregates::AggregateType(conn, name(), FromClause(), value);
    if (!type.ok()) return type.status();
    if (!type->empty() && type->back() == ']') {
      return Status::Unsupported(
          "transform " + grammar::RenderName(stmt_.target.name) + " is not supported: the column " +
          grammar::RenderName(item.alias) + " of SELECT DISTINCT ON is an array (" + *type +
          "), which Trellis cannot carry from the row kept; carry it as text or JSON, as in "
          "to_jsonb(" +
          value + ") AS " + grammar::RenderName(item.alias) +
          ", and read it back when you read the target");
    }
  }
  // Expressions evaluated per source row: GROUP BY expressions, aggregate
  // arguments, DISTINCT items, the WHERE.
  std::vector<std::string> arguments;
  for (const auto& item : stmt_.select) {
    if (!item.aggregate) continue;
    for (auto& e : grammar::RowExpressions(*item.aggregate)) arguments.push_back(std::move(e));
  }
  std::vector<std::string_view> per_row;
  for (const auto& item : stmt_.select) {
    if (!item.aggregate) per_row.push_back(item.expr);
  }
  for (const auto& a : arguments) per_row.push_back(a);
  for (const auto& g : stmt_.group_by) per_row.push_back(g);
  std::optional<std::string_view> where;
  if (stmt_.where) where = *stmt_.where;
  auto checked = check(FromClause(), per_row, where);
  if (!checked.ok()) return checked.status();
  if (whole_table_) return Status::OK();
  auto routed = RoutedColumns(conn);
  if (!routed.ok()) return routed.status();
  if (routed->front().empty()) {
    return aggregates::Refusal(name(), "no GROUP BY expression reads a column of " + source_table_ +
                                           ", so every row is in one group; drop the GROUP BY to "
                                           "aggregate over the whole table");
  }
  return Status::OK();
}

std::string GroupPlan::CreateTargetSql() const {
  std::string fresh = aggregates::FreshGroupsSql(shape_, "");
  if (whole_table_) {
    fresh = "SELECT true AS " + sql::Ident(kWholeTableKey) + ", f.* FROM (" + fresh + ") AS f";
  }
  // Every maintenance write of a group target is an update of a group's
  // row, and none changes its key: room left on each page lets PostgreSQL
  // make those updates HOT (no new index entry, the old version pruned in
  // place). bench/README.md, "Group targets' fillfactor", measures it.
  return "CREATE TABLE " + target() + " WITH (fillfactor = " + std::to_string(kTargetFillfactor) +
         ") AS " + fresh + "\nWITH NO DATA";
}

Result<std::vector<std::vector<std::string>>> GroupPlan::RoutedColumns(pg::Connection& conn) const {
  // The group expressions first: a GROUP BY that reads no column is refused
  // (CheckDefinition), whatever the arguments read.
  std::vector<std::string> exprs;
  for (const auto& k : shape_.keys) exprs.push_back(k.expr);
  auto keys = aggregates::ColumnsRead(conn, source_table_, FromClause(), exprs);
  if (!keys.ok()) return keys.status();
  if (!whole_table_ && keys->empty()) return std::vector<std::vector<std::string>>{{}};
  for (const auto& a : shape_.aggregates) {
    for (auto& e : grammar::RowExpressions(a.call)) exprs.push_back(std::move(e));
  }
  if (shape_.where) exprs.push_back(*shape_.where);
  auto read = aggregates::ColumnsRead(conn, source_table_, FromClause(), exprs);
  if (!read.ok()) return read.status();
  return std::vector<std::vector<std::string>>{read.value()};
}

std::string GroupPlan::FromClause() const { return source_table_ + " AS " + sql::Ident(alias_); }

std::vector<DirtyKeys> GroupPlan::DirtyKeySql() const {
  Slots slots{{"transform_id", std::to_string(transform_id())},
              {"source_id", std::to_string(source_id_)}};
  if (whole_table_) return {DirtyKeys{source_id_, Render(kDirtyWholeTable, slots)}};
  std::vector<std::string> key_exprs;
  for (const auto& k : shape_.keys) key_exprs.push_back("(" + k.expr + ")");
  std::vector<std::string> names;
  std::vector<std::string> values;
  for (size_t i = 0; i < routed_columns_.size(); ++i) {
    names.push_back(sql::Literal(routed_columns_[i]));
    values.push_back("__trellis_r.c" + std::to_string(i + 1));
  }
  slots["routing_rows"] = capture::RoutingRows("__trellis_s", routed_positions_, "__trellis_r");
  slots["key_text"] = sql::KeyText(key_exprs);
  slots["source_table"] = source_table_;
  slots["names"] = sql::Join(names, ", ");
  slots["values"] = sql::Join(values, ", ");
  slots["alias"] = sql::Ident(alias_);
  return {DirtyKeys{source_id_, Render(kDirtyGroups, slots)}};
}

std::string GroupPlan::Record(const std::string& keys, const std::string& when) const {
  return routes_values_ ? RecordSnapshotSql(deltas_, keys, when) : "";
}

std::string GroupPlan::DeltaRowsSql() const {
  if (!delta_ready_) return "";
  return FoldsDeltas(deltas_) ? StageFoldedDeltaRowsSql(deltas_) : StageDeltaRowsSql(deltas_);
}

std::string GroupPlan::UnfoldedDeltaRowsSql() const {
  return delta_ready_ ? StageDeltaRowsSql(deltas_) : "";
}

std::vector<PagesStatement> GroupPlan::ApplyPagesSql() const {
  if (!delta_ready_) return {PagesStatement{RecomputePagesSql(), {}}};
  std::vector<PagesStatement> out;
  for (auto& statement : ApplyDeltaRowsSql(deltas_)) out.push_back(std::move(statement));
  // Then the groups the pages list without a delta row (pages staged before
  // the transform took deltas, corrections) and the held ones.
  const size_t n = unit_key().size();
  // Without GROUP BY, also the one row when it is missing (an operator
  // deleted it): deltas only update it, and the recompute makes it again.
  const std::string missing = whole_table_ ? " OR NOT EXISTS (SELECT 1 FROM " + target() + ")" : "";
  // Skipped when staging gave every key its delta rows and nothing is held,
  // the common case; the one row of a whole-table transform is always
  // looked for.
  out.push_back(
      {RecomputeKeysFrom(
           sql::Ident(schema_) + ".pages AS p, " + sql::KeyRows("p.keys", "p.id", n, "k") +
           " WHERE p.id = ANY($1::bigint[]) AND (" +
           RecomputedOnDeltaPage(deltas_, "p.id", sql::KeyOfRow("k", n), "$1::bigint[]") + missing +
           ")"),
       whole_table_ ? "" : RecomputeNeededSql(deltas_)});
  return out;
}

std::string GroupPlan::RecomputeKeysFrom(const std::string& keys_from) const {
  if (whole_table_) {
    const std::string dirty = "(SELECT 1 FROM " + keys_from + ")";
    return aggregates::RecomputeGroupsSql(
        shape_, dirty, Record("NULL", "EXISTS (SELECT 1 FROM " + dirty + " AS d)"));
  }
  std::vector<std::string> decoded = sql::KeyRowValues("k", KeyTypes(unit_key()));
  for (size_t i = 0; i < decoded.size(); ++i) {
    decoded[i] += " AS " + aggregates::DirtyKeyColumn(i + 1);
  }
  // The keys' literals as the pages hold them, which is how delta rows name
  // their groups.
  const std::string recorded = "ARRAY(SELECT DISTINCT " +
                               sql::KeyLiteralOf(sql::KeyOfRow("k", unit_key().size())) + " FROM " +
                               keys_from + ")";
  return aggregates::RecomputeGroupsSql(
      shape_, "(SELECT DISTINCT " + sql::Join(decoded, ", ") + " FROM " + keys_from + ")",
      Record(recorded));
}

std::string GroupPlan::RecomputePagesSql() const {
  const size_t n = unit_key().size();
  return RecomputeKeysFrom(sql::Ident(schema_) + ".pages AS p, " +
                           sql::KeyRows("p.keys", "p.id", n, "k") +
                           " WHERE p.id = ANY($1::bigint[])");
}

std::string GroupPlan::RecomputeKeysSql() const {
  const size_t n = unit_key().size();
  return RecomputeKeysFrom("(SELECT 1 AS id, $1::text[] AS keys) AS p, " +
                           sql::KeyRows("p.keys", "p.id", n, "k"));
}

Bound GroupPlan::RecomputeRange(const KeyRange&,
                                const std::optional<std::vector<std::string>>&) const {
  return Bound{aggregates::RecomputeAllGroupsSql(shape_, Record("NULL")), {}};
}

Bound GroupPlan::AppendRange(const KeyRange&) const {
  std::vector<std::string> columns = KeyNames(target_key(), "");
  const std::vector<std::string> state = aggregates::StateColumnNames(shape_);
  // The build's snapshot is recorded by the build's own statement.
  const std::string record = Record("NULL");
  const std::string with =
      record.empty() ? "" : "WITH __trellis_recorded AS (\n  " + record + "\n)\n";
  if (whole_table_) {
    // The hidden key after the state, so the fresh row's columns line up.
    std::vector<std::string> all = state;
    all.insert(all.end(), columns.begin(), columns.end());
    return Bound{
        Render("{with}INSERT INTO {target} ({columns})\nSELECT *, true FROM ({fresh}) AS f",
               {{"with", with},
                {"target", target()},
                {"columns", sql::Join(all, ", ")},
                {"fresh", aggregates::FreshGroupsSql(shape_, "")}}),
        {}};
  }
  columns.insert(columns.end(), state.begin(), state.end());
  return Bound{Render("{with}INSERT INTO {target} ({columns})\n{fresh}",
                      {{"with", with},
                       {"target", target()},
                       {"columns", sql::Join(columns, ", ")},
                       {"fresh", aggregates::FreshGroupsSql(shape_, "")}}),
               {}};
}

std::string GroupPlan::AddKeySql() const {
  // PostgreSQL 15's NULLS NOT DISTINCT: a group whose key is NULL is one
  // group, as GROUP BY makes it, and ON CONFLICT finds it.
  return Render("ALTER TABLE {target} ADD UNIQUE {nulls}({keys})",
                {{"target", target()},
                 {"nulls", whole_table_ ? "" : "NULLS NOT DISTINCT "},
                 {"keys", sql::Join(KeyNames(target_key(), ""), ", ")}});
}

Bound GroupPlan::SampleBoundaries(double percent, long per_boundary, long count) const {
  return Bound{Render(kSampleGroups, {{"key_text", sql::KeyText(GroupKeyExprs(target_key()))},
                                      {"source_table", source_table_},
                                      {"alias", sql::Ident(alias_)},
                                      {"where", WhereOrTrue(shape_)}}),
               {std::to_string(percent), std::to_string(per_boundary), std::to_string(count)}};
}

std::string GroupPlan::EveryUnitKeySql() const {
  return Render(kEveryGroup, {{"source_key", sql::KeyText(GroupKeyExprs(target_key()))},
                              {"source_table", source_table_},
                              {"alias", sql::Ident(alias_)},
                              {"where", WhereOrTrue(shape_)},
                              {"target_key", sql::KeyText(KeyNames(target_key(), "t"))},
                              {"target", target()}});
}

std::string GroupPlan::KeyInputsSql() const {
  std::vector<std::string> pairs;
  const auto& key = unit_key();
  for (size_t i = 0; i < key.size(); ++i) {
    pairs.push_back(sql::Literal(key[i].name) + ", " + sql::KeyElement("$1::text[]", i));
  }
  return Render(kGroupInputs, {{"pairs", sql::Join(pairs, ", ")}});
}

std::string GroupPlan::EstimateKeysSql() const {
  return Render(kEstimateRows, {{"source", sql::Literal(source_table_)}});
}

std::string GroupPlan::DefinitionQuerySql() const {
  if (definition_over_join_) return *definition_over_join_;
  std::string grouping;
  if (!whole_table_) {
    std::vector<std::string> exprs;
    for (const auto& k : shape_.keys) exprs.push_back("(" + k.expr + ")");
    grouping = " GROUP BY " + sql::Join(exprs, ", ");
  }
  return Render("SELECT {visible} FROM {from} WHERE {where}{grouping}",
                {{"visible", sql::Join(visible_, ", ")},
                 {"from", FromClause()},
                 {"where", WhereOrTrue(shape_)},
                 {"grouping", grouping}});
}

std::vector<NamedStatement> GroupPlan::Statements() const {
  std::vector<NamedStatement> out;
  for (const auto& d : DirtyKeySql()) {
    out.push_back({"dirty_keys_" + std::to_string(d.source_id), d.sql});
  }
  out.push_back({"recompute_pages", RecomputePagesSql()});
  out.push_back({"recompute_keys", RecomputeKeysSql()});
  out.push_back({"recompute_range_all", RecomputeRange(KeyRange{}, std::nullopt).text});
  out.push_back({"append_range_all", AppendRange(KeyRange{}).text});
  out.push_back({"create_target", CreateTargetSql()});
  out.push_back({"add_key", AddKeySql()});
  out.push_back({"sample_boundaries", SampleBoundaries(1, 1, 1).text});
  out.push_back({"estimate_keys", EstimateKeysSql()});
  out.push_back({"definition_query", DefinitionQuerySql()});
  return out;
}

}  // namespace trellis::plan
