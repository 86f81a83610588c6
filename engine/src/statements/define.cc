#include "statements/define.h"

#include <algorithm>
#include <set>

#include "capture/sources.h"
#include "catalog/locks.h"
#include "catalog/migrations.h"
#include "catalog/states.h"
#include "grammar/render.h"
#include "sql/quote.h"
#include "sql/row_reader.h"
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

// Refuses a source whose writes do not all fire its own triggers: a
// partitioned table or an inheritance parent (a write that names a
// partition or child fires that table's triggers, not the parent's), and a
// partition or child (a write through the parent fires the parent's). The
// joins and partitions issue captures them; until then define says so.
Status RefuseInheritance(pg::Connection& conn, const capture::ResolvedTable& table,
                         const std::string& shown) {
  auto rows = conn.Query(R"sql(
SELECT c.relkind = 'p',
       EXISTS (SELECT 1 FROM pg_catalog.pg_inherits i WHERE i.inhparent = c.oid),
       c.relispartition,
       EXISTS (SELECT 1 FROM pg_catalog.pg_inherits i WHERE i.inhrelid = c.oid)
FROM pg_catalog.pg_class c WHERE c.oid = $1::oid)sql",
                         {table.oid});
  if (!rows.ok()) return rows.status();
  if (rows->empty()) return Status::NotFound("source table " + shown + " does not exist");
  const std::string fix =
      "; Trellis does not capture partitioned or inherited tables yet: define the transform over "
      "a table without partitions or inheritance";
  if (rows->text(0, 0) == "t") {
    return Status::Validation("source table " + shown +
                              " is partitioned, and writes that name a partition would not reach "
                              "the target" +
                              fix);
  }
  if (rows->text(0, 1) == "t") {
    return Status::Validation("source table " + shown +
                              " has inheritance children, and writes that name a child would not "
                              "reach the target" +
                              fix);
  }
  if (rows->text(0, 2) == "t" || rows->text(0, 3) == "t") {
    return Status::Validation("source table " + shown +
                              " is a partition or inheritance child, and writes made through its "
                              "parent would not reach the target" +
                              fix);
  }
  return Status::OK();
}

}  // namespace

Result<std::string> Define(pg::Connection& conn, const std::string& schema,
                           const grammar::TransformStmt& stmt) {
  TRELLIS_RETURN_IF_ERROR(RefuseUnsupported(stmt));
  const std::string& name = stmt.target.name;
  const std::string shown_target = grammar::RenderQualified(stmt.target);
  const std::string shown_source = grammar::RenderQualified(stmt.source.table);

  auto tx = pg::Transaction::Begin(conn);
  if (!tx.ok()) return tx.status();
  TRELLIS_RETURN_IF_ERROR(catalog::CheckMigrated(conn, schema));

  auto source = capture::ResolveTable(conn, stmt.source.table);
  if (!source.ok()) return source.status();
  TRELLIS_RETURN_IF_ERROR(RefuseInheritance(conn, source.value(), shown_source));
  if (source->key_columns.empty()) {
    return Status::Validation("source table " + shown_source +
                              " has no primary key; Trellis keys a projection's target by its "
                              "source's primary key: add one (ALTER TABLE ... ADD PRIMARY KEY)");
  }

  // Every wait on the source happens here, before any catalog lock: a long
  // transaction holding the source delays this define and nothing else
  // (spec/engine.md "Locks"). A source read by no transform yet gets its
  // capture triggers below, which needs SHARE ROW EXCLUSIVE; that lock also
  // keeps writers out until the define commits.
  auto registered =
      conn.Query(sql::WithSchema("SELECT 1 FROM {schema}.sources WHERE relid = $1::oid", schema),
                 {source->oid});
  if (!registered.ok()) return registered.status();
  const std::string source_table = sql::Qualified(source->schema_name, source->table_name);
  TRELLIS_RETURN_IF_ERROR(conn.Exec("LOCK TABLE " + source_table + " IN " +
                                    (registered->empty() ? "SHARE ROW EXCLUSIVE" : "ACCESS SHARE") +
                                    " MODE"));
  // No staging batch runs across this define's commit (catalog/locks.h):
  // one that loaded the transforms before it would miss the new one.
  TRELLIS_RETURN_IF_ERROR(catalog::FenceStaging(conn, schema));
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

  const std::string source_from = source_table + " AS " + sql::Ident(qualifier);
  std::vector<std::string> exprs;
  for (const auto& item : items) exprs.push_back(item.expr);
  auto checked = CheckExpressions(conn, name, source_from, exprs, stmt.where);
  if (!checked.ok()) return checked.status();

  // The target's columns take the types PostgreSQL infers for the expressions.
  std::vector<std::string> select;
  std::vector<std::string> key_list;
  for (const auto& k : source->key_columns) {
    select.push_back(sql::Ident(qualifier) + "." + sql::Ident(k));
    key_list.push_back(sql::Ident(k));
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

  auto ensured = capture::EnsureSource(conn, schema, source.value());
  if (!ensured.ok()) return ensured.status();

  std::optional<std::string> where = stmt.where;
  auto inserted = conn.Query(sql::WithSchema(R"sql(
INSERT INTO {schema}.transforms (target_schema, target_name, kind, definition, where_sql)
VALUES ($1, $2, 'projection', $3, $4) RETURNING id)sql",
                                             schema),
                             {target_schema_name, name, grammar::Render(stmt), where});
  if (!inserted.ok()) return inserted.status();
  auto new_id = sql::ScalarInt64(inserted.value());
  if (!new_id.ok()) return new_id.status();
  const std::string id = std::to_string(new_id.value());
  // A projection reads one table and is keyed by its primary key.
  TRELLIS_RETURN_IF_ERROR(conn.Exec(sql::WithSchema(R"sql(
INSERT INTO {schema}.transform_inputs (transform_id, ordinal, source_id, alias, role)
VALUES ($1::int, 1, $2::int, $3, 'from'))sql",
                                                    schema),
                                    {id, std::to_string(ensured->id), qualifier}));
  TRELLIS_RETURN_IF_ERROR(conn.Exec(sql::WithSchema(R"sql(
INSERT INTO {schema}.target_key_columns (transform_id, ordinal, name, expr, sql_type)
SELECT $1::int, k.ord, k.name, format('%I.%I', $2::text, k.name), k.sql_type
FROM unnest($3::text[], $4::text[]) WITH ORDINALITY AS k(name, sql_type, ord))sql",
                                                    schema),
                                    {id, qualifier, sql::ArrayLiteral(source->key_columns),
                                     sql::ArrayLiteral(source->key_types)}));
  for (size_t i = 0; i < items.size(); ++i) {
    TRELLIS_RETURN_IF_ERROR(
        conn.Exec(sql::WithSchema(R"sql(
INSERT INTO {schema}.transform_columns (transform_id, ordinal, name, expr, sql_type)
SELECT $1::int, $2::int, $3::text, $4::text, format_type(a.atttypid, a.atttypmod)
FROM pg_attribute a WHERE a.attrelid = $5::regclass AND a.attname = $3::name)sql",
                                  schema),
                  {id, std::to_string(i + 1), items[i].alias, items[i].expr, target}));
  }

  // A source with no rows (the usual case in a migration) is built now: the
  // target is empty too, so the transform is live when define returns. Safe
  // against writers: those that committed earlier are seen here, and later
  // ones are captured and staged only once the define has committed.
  auto empty = conn.Query("SELECT NOT EXISTS (SELECT 1 FROM " + source_table + ")");
  if (!empty.ok()) return empty.status();
  if (empty->text(0, 0) == "t") {
    TRELLIS_RETURN_IF_ERROR(conn.Exec("ALTER TABLE " + target + " ADD PRIMARY KEY (" +
                                      sql::Join(key_list, ", ") + ")"));
    TRELLIS_RETURN_IF_ERROR(
        catalog::FinishEmptyBuild(conn, schema, static_cast<int>(new_id.value())));
  }
  TRELLIS_RETURN_IF_ERROR(tx.value()->Commit());
  return shown_target;
}

}  // namespace trellis::statements
