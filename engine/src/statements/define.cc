#include "statements/define.h"

#include <algorithm>
#include <set>

#include "capture/sources.h"
#include "catalog/migrations.h"
#include "grammar/render.h"
#include "sql/quote.h"
#include "statements/expression_check.h"

namespace trellis::statements {
namespace {

// True when `expr` is nothing but a reference to `column` (bare, quoted, or
// qualified by the source's qualifier): a SELECT item that merely repeats a
// key column, which the target carries anyway.
bool IsColumnReference(const std::string& expr, const std::string& column,
                       const std::string& qualifier) {
  auto matches = [&](const std::string& text) {
    return text == column || text == sql::Ident(column);
  };
  if (matches(expr)) return true;
  for (const auto& q : {qualifier, sql::Ident(qualifier)}) {
    const std::string prefix = q + ".";
    if (expr.rfind(prefix, 0) == 0 && matches(expr.substr(prefix.size()))) return true;
  }
  return false;
}

Status RefuseUnsupported(const grammar::TransformStmt& stmt) {
  if (stmt.join) {
    return Status::Unsupported(
        "JOIN transforms are parsed but not executed by this version of Trellis; define a "
        "projection (SELECT ... [WHERE ...]) over one table");
  }
  if (!stmt.group_by.empty() || stmt.distinct) {
    return Status::Unsupported(
        "GROUP BY and SELECT DISTINCT transforms are parsed but not executed by this version of "
        "Trellis; define a projection (SELECT ... [WHERE ...]) over one table");
  }
  return Status::OK();
}

}  // namespace

Result<std::string> Define(pg::Connection& conn, const std::string& schema,
                           const grammar::TransformStmt& stmt) {
  TRELLIS_RETURN_IF_ERROR(RefuseUnsupported(stmt));
  const std::string& name = stmt.target.name;
  const std::string shown_target = grammar::RenderQualified(stmt.target);

  auto tx = pg::Transaction::Begin(conn);
  if (!tx.ok()) return tx.status();
  TRELLIS_RETURN_IF_ERROR(catalog::CheckMigrated(conn, schema));
  // Defines and drops serialise on the catalog, so two nodes defining the same
  // name cannot both pass the checks below.
  TRELLIS_RETURN_IF_ERROR(conn.Exec(
      sql::WithSchema("LOCK TABLE {schema}.transforms IN SHARE ROW EXCLUSIVE MODE", schema)));

  auto taken = conn.Query(
      sql::WithSchema("SELECT 1 FROM {schema}.transforms WHERE target_name = $1", schema), {name});
  if (!taken.ok()) return taken.status();
  if (!taken->empty()) {
    return Status::AlreadyExists("a transform named " + sql::Ident(name) +
                                 " already exists; DROP TRANSFORM it first or choose another name");
  }

  auto source = capture::ResolveTable(conn, stmt.source.table);
  if (!source.ok()) return source.status();
  if (source->key_columns.empty()) {
    return Status::Validation("source table " + grammar::RenderQualified(stmt.source.table) +
                              " has no primary key; Trellis keys a projection's target by its "
                              "source's primary key: add one (ALTER TABLE ... ADD PRIMARY KEY)");
  }

  // An unqualified target goes where CREATE TABLE would put it.
  auto current_schema = conn.Query("SELECT current_schema()");
  if (!current_schema.ok()) return current_schema.status();
  const std::string target_schema_name =
      stmt.target.schema ? *stmt.target.schema : current_schema->text(0, 0);
  auto exists =
      conn.Query("SELECT to_regclass($1) IS NOT NULL", {sql::Qualified(target_schema_name, name)});
  if (!exists.ok()) return exists.status();
  if (exists->text(0, 0) == "t") {
    return Status::AlreadyExists("a table named " + shown_target +
                                 " already exists; a transform creates its own target table: "
                                 "choose another target name");
  }

  // The SELECT items the target stores; items that repeat a key column are
  // the key itself.
  const std::string qualifier = stmt.source.Qualifier();
  std::vector<grammar::SelectItem> items;
  std::set<std::string> keys(source->key_columns.begin(), source->key_columns.end());
  for (const auto& item : stmt.select) {
    if (keys.count(item.alias)) {
      if (IsColumnReference(item.expr, item.alias, qualifier)) continue;
      return Status::Validation("column " + sql::Ident(item.alias) + " of transform " +
                                sql::Ident(name) +
                                " is the target's key (the source's primary key column); give "
                                "this expression another name");
    }
    items.push_back(item);
  }

  const std::string source_from =
      sql::Qualified(source->schema_name, source->table_name) + " AS " + sql::Ident(qualifier);
  std::vector<std::string> exprs;
  for (const auto& item : items) exprs.push_back(item.expr);
  auto checked = CheckExpressions(conn, name, source_from, exprs, stmt.where);
  if (!checked.ok()) return checked.status();

  // The target's columns take the types PostgreSQL infers for the expressions.
  std::vector<std::string> select;
  for (const auto& k : source->key_columns) {
    select.push_back(sql::Ident(qualifier) + "." + sql::Ident(k));
  }
  for (const auto& item : items) {
    select.push_back("(" + item.expr + ") AS " + sql::Ident(item.alias));
  }
  const std::string target = sql::Qualified(target_schema_name, name);
  Status created = conn.Exec("CREATE TABLE " + target + " AS SELECT " + sql::Join(select, ", ") +
                             " FROM " + source_from + " WITH NO DATA");
  if (!created.ok()) return DefinitionError(name, created);
  // The primary key is added when the first build ends (spec/engine.md,
  // "Backfill"): appending rows and then building the key once is several
  // times faster than maintaining it row by row.

  auto registered = capture::EnsureSource(conn, schema, source.value());
  if (!registered.ok()) return registered.status();

  std::optional<std::string> where = stmt.where;
  auto inserted = conn.Query(sql::WithSchema(R"sql(
INSERT INTO {schema}.transforms (target_schema, target_name, source_id, source_alias, kind,
                                 definition, where_sql)
VALUES ($1, $2, $3::int, $4, 'projection', $5, $6) RETURNING id)sql",
                                             schema),
                             {target_schema_name, name, std::to_string(registered->id), qualifier,
                              grammar::Render(stmt), where});
  if (!inserted.ok()) return inserted.status();
  const std::string id = inserted->text(0, 0);
  for (size_t i = 0; i < items.size(); ++i) {
    TRELLIS_RETURN_IF_ERROR(
        conn.Exec(sql::WithSchema(R"sql(
INSERT INTO {schema}.transform_columns (transform_id, ordinal, name, expr, sql_type)
SELECT $1::int, $2::int, $3::text, $4::text, format_type(a.atttypid, a.atttypmod)
FROM pg_attribute a WHERE a.attrelid = $5::regclass AND a.attname = $3::name)sql",
                                  schema),
                  {id, std::to_string(i + 1), items[i].alias, items[i].expr, target}));
  }
  TRELLIS_RETURN_IF_ERROR(tx.value()->Commit());
  return shown_target;
}

}  // namespace trellis::statements
