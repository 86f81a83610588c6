#include "statements/alter.h"

#include <algorithm>
#include <functional>
#include <variant>

#include "catalog/migrations.h"
#include "catalog/model.h"
#include "catalog/parts.h"
#include "catalog/states.h"
#include "grammar/address.h"
#include "grammar/parser.h"
#include "grammar/render.h"
#include "plan/bind.h"
#include "sql/quote.h"
#include "statements/alter_group.h"
#include "statements/alter_group_join.h"
#include "statements/alter_lock.h"
#include "statements/expression_check.h"

namespace trellis::statements {
namespace {

// The transform an ALTER names, locked, inside a fresh transaction.
struct Altering {
  std::unique_ptr<pg::Transaction> tx;
  catalog::Transform transform;
};

// A DROP and a new DEFINE of the name between the lock and the row lock
// change the transforms it names; the ALTER then starts over, this often.
constexpr int kBeginTries = 3;

// `routes`: the ALTER may add a column a group transform must route
// (alter_group.h LockSourceForRouting). Locks in the order of
// spec/engine.md "Lock order": the drain locks of the transforms it
// changes, then tables, then catalog rows.
Result<Altering> Begin(pg::Connection& conn, const std::string& schema,
                       const grammar::QualifiedName& target, bool routes = false) {
  for (int attempt = 1;; ++attempt) {
    auto tx = pg::Transaction::Begin(conn);
    if (!tx.ok()) return tx.status();
    TRELLIS_RETURN_IF_ERROR(catalog::CheckMigrated(conn, schema));
    auto locked = LockAlteredTransforms(conn, schema, target.name);
    if (!locked.ok()) return locked.status();
    TRELLIS_RETURN_IF_ERROR(LockGroupedJoinTables(conn, schema, target.name));
    if (routes) TRELLIS_RETURN_IF_ERROR(LockSourceForRouting(conn, schema, target.name));
    auto t = catalog::LoadTransform(conn, schema, target.name, /*lock=*/true);
    if (!t.ok()) return t.status();
    TRELLIS_RETURN_IF_ERROR(catalog::RefuseHiddenPart(conn, schema, t.value()));
    if (target.schema && *target.schema != t->target_schema) {
      return Status::NotFound("no transform named " + grammar::RenderQualified(target));
    }
    auto now = AlteredTransformIds(conn, schema, target.name);
    if (!now.ok()) return now.status();
    if (now.value() == locked.value()) return Altering{std::move(tx.value()), std::move(t.value())};
    if (attempt == kBeginTries) {
      return Status::Timeout("transform " + grammar::RenderQualified(target) +
                             " was dropped and defined again while this ALTER waited for its "
                             "drains, " +
                             std::to_string(kBeginTries) + " times: apply the ALTER again");
    }
    // Rolled back here (the transaction's destructor): nothing was changed.
  }
}

std::string TargetTable(const catalog::Transform& t) {
  return sql::Qualified(t.target_schema, t.target_name);
}

bool HasColumn(const catalog::Transform& t, const std::string& name) {
  return std::any_of(t.columns.begin(), t.columns.end(),
                     [&](const catalog::Column& c) { return c.name == name; });
}

bool IsKey(const catalog::Transform& t, const std::string& name) {
  return std::any_of(t.key.begin(), t.key.end(),
                     [&](const catalog::KeyColumn& k) { return k.name == name; });
}

// Checks `item` as a column of the transform's target, as its plan's kind
// does; returns the column's type.
Result<std::string> CheckOne(pg::Connection& conn, const std::string& schema,
                             const catalog::Transform& t, const grammar::SelectItem& item) {
  auto plan = plan::Bind(t, schema);
  if (!plan.ok()) return plan.status();
  return plan.value()->CheckColumn(conn, ExpressionCheckFor(conn, t.name()), item);
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

Result<ApplyResult> Finish(Altering& a) {
  TRELLIS_RETURN_IF_ERROR(a.tx->Commit());
  return ApplyResult{"altered", grammar::RenderTransformName(a.transform.name()), {}};
}

}  // namespace

Status AddRowColumn(pg::Connection& conn, const std::string& schema, const catalog::Transform& t,
                    const grammar::SelectItem& column) {
  const std::string& name = column.alias;
  if (HasColumn(t, name) || IsKey(t, name)) {
    return Status::AlreadyExists("transform " + sql::Ident(t.name()) + " already has a column " +
                                 sql::Ident(name));
  }
  auto type = CheckOne(conn, schema, t, column);
  if (!type.ok()) return type.status();
  TRELLIS_RETURN_IF_ERROR(conn.Exec("ALTER TABLE " + TargetTable(t) + " ADD COLUMN " +
                                    sql::Ident(name) + " " + type.value()));
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

Result<ApplyResult> AlterAddColumn(pg::Connection& conn, const std::string& schema,
                                   const grammar::AlterAddColumnStmt& stmt) {
  auto a = Begin(conn, schema, stmt.target, /*routes=*/true);
  if (!a.ok()) return a.status();
  const catalog::Transform& t = a->transform;
  if (t.kind == "group_by") {
    TRELLIS_RETURN_IF_ERROR(AlterGroupAddColumn(conn, schema, t, stmt.column));
  } else {
    TRELLIS_RETURN_IF_ERROR(AddRowColumn(conn, schema, t, stmt.column));
  }
  return Finish(a.value());
}

Result<ApplyResult> AlterDropColumn(pg::Connection& conn, const std::string& schema,
                                    const grammar::AlterDropColumnStmt& stmt) {
  auto a = Begin(conn, schema, stmt.target);
  if (!a.ok()) return a.status();
  const catalog::Transform& t = a->transform;
  if (t.kind == "group_by") {
    TRELLIS_RETURN_IF_ERROR(AlterGroupDropColumn(conn, schema, t, stmt.column));
    return Finish(a.value());
  }
  if (IsKey(t, stmt.column)) {
    return Status::Validation("column " + sql::Ident(stmt.column) + " is the key of transform " +
                              sql::Ident(t.name()) + " and cannot be dropped");
  }
  if (!HasColumn(t, stmt.column)) {
    return Status::NotFound("transform " + sql::Ident(t.name()) + " has no column " +
                            sql::Ident(stmt.column));
  }
  TRELLIS_RETURN_IF_ERROR(
      conn.Exec("ALTER TABLE " + TargetTable(t) + " DROP COLUMN " + sql::Ident(stmt.column)));
  TRELLIS_RETURN_IF_ERROR(conn.Exec(
      sql::WithSchema(
          "DELETE FROM {schema}.transform_columns WHERE transform_id = $1::int AND name = $2",
          schema),
      {std::to_string(t.id), stmt.column}));
  TRELLIS_RETURN_IF_ERROR(
      StoreDefinition(conn, schema, t.id, t.definition, [&](grammar::TransformStmt& s) {
        std::erase_if(s.select,
                      [&](const grammar::SelectItem& i) { return i.alias == stmt.column; });
      }));
  return Finish(a.value());
}

Result<ApplyResult> AlterColumn(pg::Connection& conn, const std::string& schema,
                                const grammar::AlterColumnStmt& stmt) {
  auto a = Begin(conn, schema, stmt.target, /*routes=*/true);
  if (!a.ok()) return a.status();
  const catalog::Transform& t = a->transform;
  if (t.kind == "group_by") {
    TRELLIS_RETURN_IF_ERROR(AlterGroupColumn(conn, schema, t, stmt.column));
    return Finish(a.value());
  }
  const std::string& name = stmt.column.alias;
  auto existing = std::find_if(t.columns.begin(), t.columns.end(),
                               [&](const catalog::Column& c) { return c.name == name; });
  if (existing == t.columns.end()) {
    return Status::NotFound("transform " + sql::Ident(t.name()) + " has no column " +
                            sql::Ident(name));
  }
  auto type = CheckOne(conn, schema, t, stmt.column);
  if (!type.ok()) return type.status();
  if (type.value() != existing->sql_type) {
    // The old values cannot be trusted in the new type; the rebuild refills them.
    TRELLIS_RETURN_IF_ERROR(conn.Exec("ALTER TABLE " + TargetTable(t) + " ALTER COLUMN " +
                                      sql::Ident(name) + " TYPE " + type.value() + " USING NULL"));
  }
  TRELLIS_RETURN_IF_ERROR(
      catalog::RecordColumnExpression(conn, schema, t.id, name, stmt.column.expr, type.value()));
  TRELLIS_RETURN_IF_ERROR(
      StoreDefinition(conn, schema, t.id, t.definition, [&](grammar::TransformStmt& s) {
        for (auto& item : s.select) {
          if (item.alias == name) item.expr = stmt.column.expr;
        }
      }));
  TRELLIS_RETURN_IF_ERROR(
      catalog::RequestRebuild(conn, schema, t.id, std::vector<std::string>{name}));
  return Finish(a.value());
}

}  // namespace trellis::statements
