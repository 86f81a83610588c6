// ALTER TRANSFORM of a GROUP BY transform (issue 11): GroupPlan's
// AlterPlan (group_plan.h says what each does). Each runs inside the
// ALTER's transaction and changes nothing on error.
#include <algorithm>
#include <variant>

#include "capture/routing.h"
#include "capture/sources.h"
#include "catalog/locks.h"
#include "catalog/states.h"
#include "grammar/parser.h"
#include "grammar/render.h"
#include "plan/aggregate_stages_define.h"
#include "plan/aggregates/rules.h"
#include "plan/bind.h"
#include "plan/expression_check.h"
#include "plan/group_alter_over_join.h"
#include "plan/group_define_over_join.h"
#include "plan/group_plan.h"
#include "sql/quote.h"

namespace trellis::plan {
namespace {

namespace agg = aggregates;

std::string Target(const catalog::Transform& t) {
  return sql::Qualified(t.target_schema, t.target_name);
}

// The stored definition, parsed.
Result<grammar::TransformStmt> StoredStatement(const catalog::Transform& t) {
  auto parsed = grammar::Parse(t.definition);
  const auto* statement = std::get_if<grammar::Statement>(&parsed);
  const auto* stmt = statement ? std::get_if<grammar::TransformStmt>(statement) : nullptr;
  if (!stmt) return Status::Internal("the stored definition of " + t.name() + " does not parse");
  TRELLIS_RETURN_IF_ERROR(RefuseAlterOfStages(t.name(), t.definition));
  if (stmt->HasDistinctOn()) {
    return Status::Unsupported("ALTER TRANSFORM cannot change transform " +
                               grammar::RenderName(t.name()) +
                               ": its columns are the row SELECT DISTINCT ON keeps per key, "
                               "picked by its ORDER BY, which ALTER does not change; DROP "
                               "TRANSFORM it and define it again as you want it");
  }
  return *stmt;
}

const catalog::Column* FindAggregate(const catalog::Transform& t, const std::string& name) {
  for (const auto& c : t.columns) {
    if (c.name == name && c.role == catalog::ColumnRole::kAggregate) return &c;
  }
  return nullptr;
}

Status RefuseKey(const catalog::Transform& t, const std::string& name) {
  return Status::Validation("column " + sql::Ident(name) + " is a group key of transform " +
                            sql::Ident(t.name()) +
                            "; the groups are fixed when it is defined: define a new transform "
                            "to group differently");
}

Status RequireAggregate(const catalog::Transform& t, const grammar::SelectItem& column) {
  if (column.aggregate) return Status::OK();
  return Status::Validation("a column of GROUP BY transform " + sql::Ident(t.name()) +
                            " is an aggregate (count, sum, avg, min, max, bool_and, bool_or); " +
                            column.expr +
                            " is not one: group by it in a new transform, or aggregate it");
}

// The statement as it will be, checked like a define: its draft rows, with
// every existing aggregate keeping its ordinal (so its hidden columns keep
// their names), and the plan bound from them.
struct Checked {
  catalog::Transform draft;
  std::unique_ptr<TransformPlan> plan;
};

Result<Checked> CheckOverSource(pg::Connection& conn, const std::string& schema,
                                const catalog::Transform& t, const grammar::TransformStmt& stmt) {
  auto source = capture::ResolveTable(
      conn, grammar::QualifiedName{t.source.schema_name, t.source.table_name});
  if (!source.ok()) return source.status();
  std::map<std::string, int> ordinals;
  int top = 0;
  for (const auto& c : t.columns) {
    top = std::max(top, c.ordinal);
    if (c.role == catalog::ColumnRole::kAggregate) ordinals[c.name] = c.ordinal;
  }
  auto draft = GroupPlan::Draft(stmt, {source.value()}, ordinals, top + 1, {});
  if (!draft.ok()) return draft.status();
  draft->target_schema = t.target_schema;
  auto bound = Bind(draft.value(), schema);
  if (!bound.ok()) return bound.status();
  TRELLIS_RETURN_IF_ERROR(bound.value()->CheckDefinition(conn, ExpressionCheckFor(conn, t.name())));
  // Drafted again with the argument types, which decide each sum's hidden
  // state (plan/aggregates/rules.h SumKindOf).
  auto types = static_cast<const GroupPlan&>(*bound.value()).ArgumentTypes(conn);
  if (!types.ok()) return types.status();
  auto typed = GroupPlan::Draft(stmt, {source.value()}, ordinals, top + 1, types.value());
  if (!typed.ok()) return typed.status();
  typed->target_schema = t.target_schema;
  auto rebound = Bind(typed.value(), schema);
  if (!rebound.ok()) return rebound.status();
  return Checked{std::move(typed.value()), std::move(rebound.value())};
}

// As CheckOverSource; over a join, its refusals in the user's terms (its
// source is the hidden join's target, CarryJoinColumns has checked the
// grouping over the join itself).
Result<Checked> Check(pg::Connection& conn, const std::string& schema, const catalog::Transform& t,
                      const grammar::TransformStmt& stmt) {
  auto checked = CheckOverSource(conn, schema, t, stmt);
  if (checked.ok() || stmt.joins.empty()) return checked;
  return GroupingRefusal(checked.status(),
                         grammar::QualifiedName{t.source.schema_name, t.source.table_name},
                         t.name());
}

// The draft's columns of aggregate `name`: the aggregate, then its hidden
// state.
std::vector<catalog::Column> ColumnsOf(const catalog::Transform& draft, const std::string& name) {
  std::vector<catalog::Column> out;
  for (const auto& c : draft.columns) {
    if (c.name == name) out.push_back(c);
  }
  if (out.empty()) return out;
  const std::string prefix = StatePrefix(out.front().ordinal);
  for (const auto& c : draft.columns) {
    if (c.role == catalog::ColumnRole::kHidden && c.name.rfind(prefix, 0) == 0) out.push_back(c);
  }
  return out;
}

// Adds the target columns of aggregate `name` that the target lacks, typed
// (and collated) as PostgreSQL makes the columns of its recomputes in a
// CREATE TABLE AS, as a define would have them, changes a column's type or
// collation (emptying it for the rebuild) when it differs, and records them
// in the catalog at the draft's ordinals.
Status AddStateColumns(pg::Connection& conn, const std::string& schema, const catalog::Transform& t,
                       const Checked& checked, const std::string& name) {
  agg::GroupShape only = static_cast<const GroupPlan&>(*checked.plan).shape();
  std::erase_if(only.aggregates,
                [&](const agg::AggregateInput& input) { return input.column != name; });
  const std::vector<catalog::Column> columns = ColumnsOf(checked.draft, name);
  std::vector<std::string> names;
  for (const auto& c : columns) names.push_back(c.name);
  const std::string fresh = "pg_temp.trellis_new_state";
  TRELLIS_RETURN_IF_ERROR(conn.Exec("CREATE TEMPORARY TABLE trellis_new_state AS " +
                                    agg::FreshGroupsSql(only, "") + "\nWITH NO DATA"));
  auto typed = conn.Query(R"sql(
SELECT n.attname, format_type(n.atttypid, n.atttypmod), o.attname IS NOT NULL,
       o.atttypid = n.atttypid AND o.atttypmod = n.atttypmod AND o.attcollation = n.attcollation
FROM pg_attribute n
LEFT JOIN pg_attribute o ON o.attrelid = $2::regclass AND o.attname = n.attname
  AND NOT o.attisdropped
WHERE n.attrelid = $3::regclass AND n.attnum > 0
  AND n.attname = ANY($1::text[]) ORDER BY n.attnum)sql",
                          {sql::ArrayLiteral(names), Target(t), fresh});
  if (!typed.ok()) return typed.status();
  std::vector<std::string> changes;
  for (size_t r = 0; r < typed->size(); ++r) {
    const std::string column = sql::Ident(typed->text(r, 0));
    const bool adds = typed->text(r, 2) != "t";
    if (!adds && typed->text(r, 3) == "t") continue;
    auto collate = CollateClauseOf(conn, fresh, typed->text(r, 0));
    if (!collate.ok()) return collate.status();
    const std::string type = typed->text(r, 1) + collate.value();
    changes.push_back(adds ? "ADD COLUMN " + column + " " + type
                           : "ALTER COLUMN " + column + " TYPE " + type + " USING NULL");
  }
  TRELLIS_RETURN_IF_ERROR(conn.Exec("DROP TABLE pg_temp.trellis_new_state"));
  if (!changes.empty()) {
    TRELLIS_RETURN_IF_ERROR(conn.Exec("ALTER TABLE " + Target(t) + " " + sql::Join(changes, ", ")));
  }
  for (const auto& c : columns) {
    TRELLIS_RETURN_IF_ERROR(
        conn.Exec(sql::WithSchema(R"sql(
INSERT INTO {schema}.transform_columns
  (transform_id, ordinal, name, expr, sql_type, role, argument_type)
SELECT $1::int, $2::int, $3::text, $4::text, format_type(a.atttypid, a.atttypmod), $6::text, $7
FROM pg_attribute a
WHERE a.attrelid = $5::regclass AND a.attname = $3::name AND NOT a.attisdropped)sql",
                                  schema),
                  {std::to_string(t.id), std::to_string(c.ordinal), c.name, c.expr, Target(t),
                   std::string(catalog::ColumnRoleName(c.role)), c.argument_type}));
  }
  return Status::OK();
}

// Drops the hidden state columns of aggregate column `c`, from the target
// and the catalog.
Status DropHiddenState(pg::Connection& conn, const std::string& schema, const catalog::Transform& t,
                       const catalog::Column& c) {
  const std::string prefix = StatePrefix(c.ordinal);
  std::vector<std::string> drops;
  std::vector<std::string> names;
  for (const auto& column : t.columns) {
    if (column.role == catalog::ColumnRole::kHidden && column.name.rfind(prefix, 0) == 0) {
      drops.push_back("DROP COLUMN " + sql::Ident(column.name));
      names.push_back(column.name);
    }
  }
  if (drops.empty()) return Status::OK();
  TRELLIS_RETURN_IF_ERROR(conn.Exec("ALTER TABLE " + Target(t) + " " + sql::Join(drops, ", ")));
  return conn.Exec(sql::WithSchema("DELETE FROM {schema}.transform_columns WHERE transform_id = "
                                   "$1::int AND name = ANY($2::text[])",
                                   schema),
                   {std::to_string(t.id), sql::ArrayLiteral(names)});
}

// True when this transaction holds the source's SHARE ROW EXCLUSIVE lock (or
// a stronger one), which LockSourceForRouting took before any catalog lock.
Result<bool> HoldsSourceLock(pg::Connection& conn, const catalog::Source& source) {
  auto held = conn.Query(R"sql(
SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_locks l
               WHERE l.pid = pg_catalog.pg_backend_pid() AND l.locktype = 'relation'
                 AND l.granted AND l.relation = pg_catalog.to_regclass($1)
                 AND l.mode IN ('ShareRowExclusiveLock', 'ExclusiveLock', 'AccessExclusiveLock')))sql",
                         {sql::Qualified(source.schema_name, source.table_name)});
  if (!held.ok()) return held.status();
  return held->text(0, 0) == "t";
}

// A new or changed aggregate whose argument reads a source column the
// input does not route: the column joins the source's routing layout
// (capture regenerated, capture/routing.h) and the input's routed columns,
// appended so that delta rows staged before keep their values' order. The
// transform stays on the delta path; exactly once across the ALTER:
// - capture rows written before (narrower than the new layout) are read by
//   this transform's new plan as nothing, and delta rows staged before
//   (narrower than its routed columns) are not applied as deltas: their
//   groups are recomputed (plan/group_deltas.cc);
// - their writers committed before this ALTER (the source lock waited for
//   writers in flight; the staging fence for batches in flight), so the
//   rebuild the ALTER requests, which records its snapshot for every group,
//   reads their rows: every change of theirs counts there, once.
// Without the source lock (the transform changed between
// LockSourceForRouting and the catalog lock, so the lock was not taken),
// the input stops taking deltas and its groups are recomputed instead: the
// lock cannot be waited for under the catalog lock.
Status RouteNewColumns(pg::Connection& conn, const std::string& schema, const catalog::Transform& t,
                       const Checked& checked) {
  const catalog::Input& input = t.inputs.front();
  if (!input.routes_values) return Status::OK();
  auto wanted = checked.plan->RoutedColumns(conn);
  if (!wanted.ok()) return wanted.status();
  std::vector<std::string> routed = input.routed_columns;
  for (const auto& column : wanted->front()) {
    if (std::find(routed.begin(), routed.end(), column) == routed.end()) routed.push_back(column);
  }
  if (routed.size() == input.routed_columns.size()) return Status::OK();
  const std::string id = std::to_string(t.id);
  auto held = HoldsSourceLock(conn, input.source);
  if (!held.ok()) return held.status();
  if (!held.value()) {
    return conn.Exec(sql::WithSchema("UPDATE {schema}.transform_inputs SET routes_values = false "
                                     "WHERE transform_id = $1::int",
                                     schema),
                     {id});
  }
  catalog::Source source = input.source;
  auto positions = capture::EnsureRoutingColumns(conn, schema, source, routed);
  if (!positions.ok()) return positions.status();
  return conn.Exec(sql::WithSchema("UPDATE {schema}.transform_inputs SET routed_columns = "
                                   "$2::text[] WHERE transform_id = $1::int AND ordinal = 1",
                                   schema),
                   {id, sql::ArrayLiteral(routed)});
}

// The lock routing a new column needs (GroupPlan::LockForAlter says why).
Status LockSourceForRouting(pg::Connection& conn, const std::string& schema,
                            const catalog::Transform& t) {
  if (t.inputs.empty()) return Status::OK();
  const catalog::Input& input = t.inputs.front();
  if (input.routes_values) {
    TRELLIS_RETURN_IF_ERROR(conn.Exec(
        "LOCK TABLE " + sql::Qualified(input.source.schema_name, input.source.table_name) +
        " IN SHARE ROW EXCLUSIVE MODE"));
  }
  TRELLIS_RETURN_IF_ERROR(conn.Exec("LOCK TABLE " + Target(t) + " IN ACCESS EXCLUSIVE MODE"));
  return input.routes_values ? catalog::FenceStaging(conn, schema) : Status::OK();
}

}  // namespace

Status GroupPlan::LockForAlter(pg::Connection& conn, const std::string& schema,
                               const catalog::Transform& t, bool adds) const {
  TRELLIS_RETURN_IF_ERROR(LockGroupedJoinTables(conn, schema, t.name()));
  if (!adds) return Status::OK();
  // As it is now, after any wait for the join's tables (the locked load
  // that follows reports a transform gone meanwhile).
  auto now = catalog::LoadTransformById(conn, schema, t.id, /*lock=*/false);
  if (!now.ok()) return Status::OK();
  return LockSourceForRouting(conn, schema, now.value());
}

Status GroupPlan::AddColumn(pg::Connection& conn, const std::string& schema,
                            const catalog::Transform& t, const grammar::SelectItem& column) const {
  if (t.IsKeyColumn(column.alias) ||
      std::any_of(t.columns.begin(), t.columns.end(),
                  [&](const catalog::Column& c) { return c.name == column.alias; })) {
    return Status::AlreadyExists("transform " + sql::Ident(t.name()) + " already has a column " +
                                 sql::Ident(column.alias));
  }
  TRELLIS_RETURN_IF_ERROR(RequireAggregate(t, column));
  auto stmt = StoredStatement(t);
  if (!stmt.ok()) return stmt.status();
  stmt->select.push_back(column);
  TRELLIS_RETURN_IF_ERROR(CarryJoinColumns(conn, schema, t, stmt.value()));
  auto checked = Check(conn, schema, t, stmt.value());
  if (!checked.ok()) return checked.status();
  TRELLIS_RETURN_IF_ERROR(AddStateColumns(conn, schema, t, checked.value(), column.alias));
  TRELLIS_RETURN_IF_ERROR(RouteNewColumns(conn, schema, t, checked.value()));
  TRELLIS_RETURN_IF_ERROR(catalog::RecordDefinition(conn, schema, t.id, grammar::Render(*stmt)));
  return catalog::RequestRebuild(conn, schema, t.id, std::vector<std::string>{column.alias});
}

Status GroupPlan::DropColumn(pg::Connection& conn, const std::string& schema,
                             const catalog::Transform& t, const std::string& column) const {
  if (t.IsKeyColumn(column)) return RefuseKey(t, column);
  const catalog::Column* c = FindAggregate(t, column);
  if (!c) {
    return Status::NotFound("transform " + sql::Ident(t.name()) + " has no column " +
                            sql::Ident(column));
  }
  auto stmt = StoredStatement(t);
  if (!stmt.ok()) return stmt.status();
  std::erase_if(stmt->select, [&](const grammar::SelectItem& i) { return i.alias == column; });
  if (stmt->select.empty() || (stmt->group_by.empty() && !stmt->distinct &&
                               std::none_of(stmt->select.begin(), stmt->select.end(),
                                            [](const auto& i) { return i.aggregate; }))) {
    return Status::Validation("column " + sql::Ident(column) + " is the last aggregate of " +
                              sql::Ident(t.name()) + "; DROP TRANSFORM it instead");
  }
  TRELLIS_RETURN_IF_ERROR(DropHiddenState(conn, schema, t, *c));
  TRELLIS_RETURN_IF_ERROR(
      conn.Exec("ALTER TABLE " + Target(t) + " DROP COLUMN " + sql::Ident(column)));
  TRELLIS_RETURN_IF_ERROR(conn.Exec(
      sql::WithSchema(
          "DELETE FROM {schema}.transform_columns WHERE transform_id = $1::int AND name = $2",
          schema),
      {std::to_string(t.id), column}));
  return catalog::RecordDefinition(conn, schema, t.id, grammar::Render(*stmt));
}

Status GroupPlan::AlterColumn(pg::Connection& conn, const std::string& schema,
                              const catalog::Transform& t,
                              const grammar::SelectItem& column) const {
  if (t.IsKeyColumn(column.alias)) return RefuseKey(t, column.alias);
  const catalog::Column* c = FindAggregate(t, column.alias);
  if (!c) {
    return Status::NotFound("transform " + sql::Ident(t.name()) + " has no column " +
                            sql::Ident(column.alias));
  }
  TRELLIS_RETURN_IF_ERROR(RequireAggregate(t, column));
  auto stmt = StoredStatement(t);
  if (!stmt.ok()) return stmt.status();
  for (auto& item : stmt->select) {
    if (item.alias == column.alias) item = column;
  }
  TRELLIS_RETURN_IF_ERROR(CarryJoinColumns(conn, schema, t, stmt.value()));
  auto checked = Check(conn, schema, t, stmt.value());
  if (!checked.ok()) return checked.status();
  // The old state goes; the new state (its hidden columns named by the same
  // ordinal) comes, and a rebuild fills it.
  TRELLIS_RETURN_IF_ERROR(DropHiddenState(conn, schema, t, *c));
  TRELLIS_RETURN_IF_ERROR(conn.Exec(
      sql::WithSchema(
          "DELETE FROM {schema}.transform_columns WHERE transform_id = $1::int AND name = $2",
          schema),
      {std::to_string(t.id), column.alias}));
  TRELLIS_RETURN_IF_ERROR(AddStateColumns(conn, schema, t, checked.value(), column.alias));
  TRELLIS_RETURN_IF_ERROR(RouteNewColumns(conn, schema, t, checked.value()));
  TRELLIS_RETURN_IF_ERROR(catalog::RecordDefinition(conn, schema, t.id, grammar::Render(*stmt)));
  return catalog::RequestRebuild(conn, schema, t.id, std::vector<std::string>{column.alias});
}

}  // namespace trellis::plan
