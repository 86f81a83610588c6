#include "reads/dump.h"

#include "catalog/migrations.h"
#include "reads/dump_privileges.h"
#include "sql/quote.h"

namespace trellis::reads {
namespace {

// One statement per row, rendered by the server (format's %L and %I quote
// exactly as the loading server will read them). Sources are addressed by
// name, since table OIDs differ in the loaded database; a source whose
// table is gone cannot be loaded and is left out with its transforms. $1 is
// the quoted catalog schema.
constexpr const char* kRenderSql = R"sql(
WITH sources AS (
  SELECT s.*, format('%I.%I', n.nspname, c.relname) AS qualified
  FROM {schema}.sources s
  JOIN pg_catalog.pg_class c ON c.oid = s.relid
  JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
  WHERE EXISTS (SELECT 1 FROM {schema}.transform_inputs i WHERE i.source_id = s.id)
), transforms AS (
  SELECT t.* FROM {schema}.transforms t
  WHERE NOT EXISTS (SELECT 1 FROM {schema}.transform_inputs i
                    WHERE i.transform_id = t.id AND i.source_id NOT IN (SELECT id FROM sources))
)
SELECT line FROM (
  SELECT 1 AS part, id AS id, 0 AS ordinal, format(
    'INSERT INTO %s.sources (id, relid, schema_name, table_name, key_columns, key_types, '
    'routing_columns) VALUES (%s, %L::regclass, %L, %L, %L, %L, %L);',
    $1::text, id, qualified, schema_name, table_name, key_columns, key_types, routing_columns) AS line
  FROM sources
  UNION ALL
  SELECT 2, id, 0, format(
    'INSERT INTO %s.source_relations (source_id, relid) VALUES (%s, %L::regclass);',
    $1::text, id, qualified)
  FROM sources
  UNION ALL
  SELECT 3, id, 0, format(
    'INSERT INTO %s.transforms (id, target_schema, target_name, kind, definition, where_sql, '
    'created_at, source_index_optional, owner_id, stage_order, key_indexed) VALUES (%s, %L, '
    '%L, %L, %L, %L, %L, %L, %L, %s, '
    'EXISTS (SELECT 1 FROM pg_catalog.pg_constraint WHERE conrelid = %L::regclass AND '
    'contype IN (''p'', ''u'')));',
    $1::text, id, target_schema, target_name, kind, definition, where_sql, created_at,
    -- The key a first build gives its target: a primary key, or UNIQUE NULLS
    -- NOT DISTINCT when the key may be NULL (whatever the kind).
    source_index_optional, owner_id, stage_order, format('%I.%I', target_schema, target_name))
  FROM transforms
  UNION ALL
  SELECT 4, i.transform_id, i.ordinal, format(
    'INSERT INTO %s.transform_inputs (transform_id, ordinal, source_id, alias, role, joined_to, '
    'join_columns, joined_columns, routed_columns) VALUES (%s, %s, %s, %L, %L, %L, %L, %L, %L);',
    $1::text, i.transform_id, i.ordinal, i.source_id, i.alias, i.role, i.joined_to,
    i.join_columns, i.joined_columns, i.routed_columns)
  FROM {schema}.transform_inputs i WHERE i.transform_id IN (SELECT id FROM transforms)
  UNION ALL
  SELECT 5, k.transform_id, k.ordinal, format(
    'INSERT INTO %s.target_key_columns (transform_id, ordinal, name, expr, sql_type) '
    'VALUES (%s, %s, %L, %L, %L);',
    $1::text, k.transform_id, k.ordinal, k.name, k.expr, k.sql_type)
  FROM {schema}.target_key_columns k WHERE k.transform_id IN (SELECT id FROM transforms)
  UNION ALL
  SELECT 6, c.transform_id, c.ordinal, format(
    'INSERT INTO %s.transform_columns '
    '(transform_id, ordinal, name, expr, sql_type, role, argument_type) '
    'VALUES (%s, %s, %L, %L, %L, %L, %L);',
    $1::text, c.transform_id, c.ordinal, c.name, c.expr, c.sql_type, c.role, c.argument_type)
  FROM {schema}.transform_columns c WHERE c.transform_id IN (SELECT id FROM transforms)
) lines ORDER BY part, id, ordinal)sql";

}  // namespace

Result<std::string> DumpDefinitionsSql(pg::Connection& conn, const std::string& schema) {
  TRELLIS_RETURN_IF_ERROR(catalog::CheckMigrated(conn, schema));
  // One snapshot for the version and every row.
  auto tx = pg::Transaction::Begin(conn, "BEGIN ISOLATION LEVEL REPEATABLE READ");
  if (!tx.ok()) return tx.status();
  const std::string quoted = sql::Ident(schema);
  auto version =
      conn.Query(sql::WithSchema("SELECT version FROM {schema}.catalog_version", schema));
  if (!version.ok()) return version.status();
  auto lines = conn.Query(sql::WithSchema(kRenderSql, schema), {quoted});
  if (!lines.ok()) return lines.status();
  auto privileges = DumpTargetPrivilegesSql(conn, schema);
  if (!privileges.ok()) return privileges.status();
  TRELLIS_RETURN_IF_ERROR(tx.value()->Commit());

  std::string out = "\n-- Trellis definitions of the catalog in schema " + quoted +
                    " (Trellis.dump_definitions_sql/1).\n"
                    "-- Only definitions: the first drain workers on a database loaded from this\n"
                    "-- file build every target again.\n";
  out += "DELETE FROM " + quoted + ".catalog_version;\n";
  out += "INSERT INTO " + quoted + ".catalog_version (version) VALUES (" + version->text(0, 0) +
         ");\n";
  for (size_t r = 0; r < lines->size(); ++r) out += lines->text(r, 0) + "\n";
  out += privileges.value();
  for (const char* table : {"sources", "transforms"}) {
    out += "SELECT pg_catalog.setval(pg_catalog.pg_get_serial_sequence(" +
           sql::Literal(quoted + "." + table) + ", 'id'), coalesce((SELECT max(id) FROM " + quoted +
           "." + table + "), 0) + 1, false);\n";
  }
  return out;
}

}  // namespace trellis::reads
