// ALTER TRANSFORM of a transform with one target row per FROM row (a
// projection, and a join, which is a projection over its joins): a column
// is a row expression over the FROM clause; it is added, dropped or changed
// in the target, its catalog row and the stored definition, and a changed
// or new column is rebuilt alone.
#include <algorithm>
#include <functional>
#include <variant>

#include "catalog/states.h"
#include "grammar/parser.h"
#include "grammar/render.h"
#include "plan/aggregate_stages_define.h"
#include "plan/expression_check.h"
#include "plan/projection_plan.h"
#include "sql/quote.h"

namespace trellis::plan {
namespace {

std::string TargetTable(const catalog::Transform& t) {
  return sql::Qualified(t.target_schema, t.target_name);
}

bool HasColumn(const catalog::Transform& t, const std::string& name) {
  return std::any_of(t.columns.begin(), t.columns.end(),
                     [&](const catalog::Column& c) { return c.name == name; });
}

// Rewrites the stored definition so definitions/1 shows the statement that
// would create the transform as it now is.
Status StoreDefinition(pg::Connection& conn, const std::string& schema, int id,
                       const std::string& old_definition,
                       const std::function<void(grammar::TransformStmt&)>& change) {
  auto parsed = grammar::Parse(old_definition);
  if (auto* error = std::get_if<grammar::ParseError>(&parsed)) {
    return Status::Internal("stored definition does not parse: " + error->message);
  }
  auto* stmt = std::get_if<grammar::TransformStmt>(&std::get<grammar::Statement>(parsed));
  if (!stmt) return Status::Internal("stored definition is not a TRANSFORM");
  change(*stmt);
  return catalog::RecordDefinition(conn, schema, id, grammar::Render(*stmt));
}

// The COLLATE clause (CollateClauseOf) of the column CREATE TABLE AS would
// make of `expr` over `from`, as a define makes the target: typed by a
// zero-row table, which runs nothing.
Result<std::string> CollateClauseOfExpression(pg::Connection& conn, const std::string& from,
                                              const std::string& expr) {
  TRELLIS_RETURN_IF_ERROR(conn.Exec("CREATE TEMPORARY TABLE trellis_new_column AS SELECT (" + expr +
                                    ") AS c FROM " + from + " WITH NO DATA"));
  auto collate = CollateClauseOf(conn, "pg_temp.trellis_new_column", "c");
  TRELLIS_RETURN_IF_ERROR(conn.Exec("DROP TABLE pg_temp.trellis_new_column"));
  return collate;
}

}  // namespace

Status ProjectionPlan::AddColumn(pg::Connection& conn, const std::string& schema,
                                 const catalog::Transform& t,
                                 const grammar::SelectItem& column) const {
  TRELLIS_RETURN_IF_ERROR(RefuseAlterOfStages(t.name(), t.definition));
  const std::string& name = column.alias;
  if (HasColumn(t, name) || t.IsKeyColumn(name)) {
    return Status::AlreadyExists("transform " + sql::Ident(t.name()) + " already has a column " +
                                 sql::Ident(name));
  }
  auto type = CheckColumn(conn, ExpressionCheckFor(conn, t.name()), column);
  if (!type.ok()) return type.status();
  auto collate = CollateClauseOfExpression(conn, FromClause(), column.expr);
  if (!collate.ok()) return collate.status();
  TRELLIS_RETURN_IF_ERROR(conn.Exec("ALTER TABLE " + TargetTable(t) + " ADD COLUMN " +
                                    sql::Ident(name) + " " + type.value() + collate.value()));
  TRELLIS_RETURN_IF_ERROR(conn.Exec(sql::WithSchema(R"sql(
INSERT INTO {schema}.transform_columns (transform_id, ordinal, name, expr, sql_type)
SELECT $1::int, coalesce(max(ordinal), 0) + 1, $2, $3, $4
FROM {schema}.transform_columns WHERE transform_id = $1::int)sql",
                                                    schema),
                                    {std::to_string(t.id), name, column.expr, type.value()}));
  TRELLIS_RETURN_IF_ERROR(
      StoreDefinition(conn, schema, t.id, t.definition,
                      [&](grammar::TransformStmt& s) { s.select.push_back(column); }));
  return catalog::RequestRebuild(conn, schema, t.id, std::vector<std::string>{name});
}

Status ProjectionPlan::DropColumn(pg::Connection& conn, const std::string& schema,
                                  const catalog::Transform& t, const std::string& column) const {
  TRELLIS_RETURN_IF_ERROR(RefuseAlterOfStages(t.name(), t.definition));
  if (t.IsKeyColumn(column)) {
    return Status::Validation("column " + sql::Ident(column) + " is the key of transform " +
                              sql::Ident(t.name()) + " and cannot be dropped");
  }
  if (!HasColumn(t, column)) {
    return Status::NotFound("transform " + sql::Ident(t.name()) + " has no column " +
                            sql::Ident(column));
  }
  TRELLIS_RETURN_IF_ERROR(
      conn.Exec("ALTER TABLE " + TargetTable(t) + " DROP COLUMN " + sql::Ident(column)));
  TRELLIS_RETURN_IF_ERROR(conn.Exec(
      sql::WithSchema(
          "DELETE FROM {schema}.transform_columns WHERE transform_id = $1::int AND name = $2",
          schema),
      {std::to_string(t.id), column}));
  return StoreDefinition(conn, schema, t.id, t.definition, [&](grammar::TransformStmt& s) {
    std::erase_if(s.select, [&](const grammar::SelectItem& i) { return i.alias == column; });
  });
}

Status ProjectionPlan::AlterColumn(pg::Connection& conn, const std::string& schema,
                                   const catalog::Transform& t,
                                   const grammar::SelectItem& column) const {
  TRELLIS_RETURN_IF_ERROR(RefuseAlterOfStages(t.name(), t.definition));
  const std::string& name = column.alias;
  auto existing = std::find_if(t.columns.begin(), t.columns.end(),
                               [&](const catalog::Column& c) { return c.name == name; });
  if (existing == t.columns.end()) {
    return Status::NotFound("transform " + sql::Ident(t.name()) + " has no column " +
                            sql::Ident(name));
  }
  auto type = CheckColumn(conn, ExpressionCheckFor(conn, t.name()), column);
  if (!type.ok()) return type.status();
  auto collate = CollateClauseOfExpression(conn, FromClause(), column.expr);
  if (!collate.ok()) return collate.status();
  auto had = CollateClauseOf(conn, TargetTable(t), name);
  if (!had.ok()) return had.status();
  if (type.value() != existing->sql_type || collate.value() != had.value()) {
    // The old values cannot be trusted in the new type; the rebuild refills them.
    TRELLIS_RETURN_IF_ERROR(conn.Exec("ALTER TABLE " + TargetTable(t) + " ALTER COLUMN " +
                                      sql::Ident(name) + " TYPE " + type.value() + collate.value() +
                                      " USING NULL"));
  }
  TRELLIS_RETURN_IF_ERROR(
      catalog::RecordColumnExpression(conn, schema, t.id, name, column.expr, type.value()));
  TRELLIS_RETURN_IF_ERROR(
      StoreDefinition(conn, schema, t.id, t.definition, [&](grammar::TransformStmt& s) {
        for (auto& item : s.select) {
          if (item.alias == name) item.expr = column.expr;
        }
      }));
  return catalog::RequestRebuild(conn, schema, t.id, std::vector<std::string>{name});
}

}  // namespace trellis::plan
