#include "capture/sources.h"

#include "capture/attachment.h"
#include "capture/functions.h"
#include "capture/publication.h"
#include "capture/relations.h"
#include "capture/triggers.h"
#include "grammar/render.h"
#include "sql/quote.h"
#include "sql/row_reader.h"

namespace trellis::capture {
namespace {

// Captures relation `relid` of `source` as the catalog's mode says: its
// triggers, or (logical decoding) its place in the publication with the
// replica identity its readers need (capture/publication.h).
Status CaptureRelation(pg::Connection& conn, const std::string& schema,
                       const catalog::Source& source, const std::string& relid) {
  auto publication = LogicalPublication(conn, schema);
  if (!publication.ok()) return publication.status();
  if (publication.value()) {
    return PublishRelation(conn, *publication.value(), source.routing_columns, relid);
  }
  return InstallTriggers(conn, schema, source.id, relid);
}

// Functions first: a trigger names its function when it is created. They
// are made in logical mode too, so a switch back to triggers needs nothing
// more than the triggers.
Status Install(pg::Connection& conn, const std::string& schema, const catalog::Source& source,
               const std::string& relid) {
  TRELLIS_RETURN_IF_ERROR(InstallFunctions(conn, schema, source));
  return CaptureRelation(conn, schema, source, relid);
}

}  // namespace

Result<ResolvedTable> ResolveTable(pg::Connection& conn, const grammar::QualifiedName& name) {
  std::string quoted =
      name.schema ? sql::Qualified(*name.schema, name.name) : sql::Ident(name.name);
  auto rows = conn.Query(R"sql(
SELECT c.oid, n.nspname, c.relname, c.relkind::text
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.oid = to_regclass($1))sql",
                         {quoted});
  if (!rows.ok()) return rows.status();
  const std::string shown = grammar::RenderQualified(name);
  if (rows->empty()) return Status::NotFound("source table " + shown + " does not exist");
  const std::string relkind = rows->text(0, 3);
  if (relkind != "r" && relkind != "p") {
    return Status::Validation(shown + " is not a table; a transform's source must be a table");
  }
  ResolvedTable table{rows->text(0, 0), rows->text(0, 1), rows->text(0, 2), {}, {}, {}};
  auto key = conn.Query(R"sql(
SELECT a.attname, format_type(a.atttypid, a.atttypmod)
FROM pg_index i
CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, ord)
JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
WHERE i.indrelid = $1::oid AND i.indisprimary
ORDER BY k.ord)sql",
                        {table.oid});
  if (!key.ok()) return key.status();
  for (size_t r = 0; r < key->size(); ++r) {
    table.key_columns.push_back(key->text(r, 0));
    table.key_types.push_back(key->text(r, 1));
  }
  return table;
}

catalog::Source DraftSource(const ResolvedTable& table) {
  return catalog::Source{
      0,  table.schema_name,         table.table_name, table.key_columns, table.key_types,
      {}, table.nullable_key_columns};
}

Result<catalog::Source> EnsureSource(pg::Connection& conn, const std::string& schema,
                                     const ResolvedTable& table) {
  auto existing = conn.Query(
      sql::WithSchema("SELECT id, routing_columns FROM {schema}.sources WHERE relid = $1::oid",
                      schema),
      {table.oid});
  if (!existing.ok()) return existing.status();
  catalog::Source source{0,
                         table.schema_name,
                         table.table_name,
                         table.key_columns,
                         table.key_types,
                         table.key_columns,
                         table.nullable_key_columns};
  if (!existing->empty()) {
    sql::RowReader row(existing.value(), 0);
    source.id = row.Int(0);
    source.routing_columns = row.TextArray(1);
    if (!row.status().ok()) return row.status();
    return source;
  }
  auto inserted =
      conn.Query(sql::WithSchema(R"sql(
INSERT INTO {schema}.sources (relid, schema_name, table_name, key_columns, key_types, routing_columns)
VALUES ($1::oid, $2, $3, $4::text[], $5::text[], $4::text[]) RETURNING id)sql",
                                 schema),
                 {table.oid, table.schema_name, table.table_name,
                  sql::ArrayLiteral(table.key_columns), sql::ArrayLiteral(table.key_types)});
  if (!inserted.ok()) return inserted.status();
  auto new_id = sql::ScalarInt64(inserted.value());
  if (!new_id.ok()) return new_id.status();
  source.id = static_cast<int>(new_id.value());
  TRELLIS_RETURN_IF_ERROR(conn.Exec(
      sql::WithSchema(
          "INSERT INTO {schema}.source_relations (source_id, relid) VALUES ($1::int, $2::oid)",
          schema),
      {std::to_string(source.id), table.oid}));
  TRELLIS_RETURN_IF_ERROR(Install(conn, schema, source, table.oid));
  // Partitions and inheritance children: writes naming them fire their own
  // triggers (capture/relations.h).
  TRELLIS_RETURN_IF_ERROR(CaptureRelationsUnder(conn, schema, source, table.oid));
  return source;
}

Status AddRelation(pg::Connection& conn, const std::string& schema, const catalog::Source& source,
                   const std::string& relid, const std::string& parent_relid,
                   const std::string& node) {
  // The link as it is now: callers hold a lock that keeps it so until they
  // commit (capture/attachment.h). Gone meanwhile: NULL, which the relation
  // sync takes for a change next round.
  TRELLIS_RETURN_IF_ERROR(conn.Exec(sql::WithSchema(R"sql(
INSERT INTO {schema}.source_relations (source_id, relid, parent_relid, node, attachment)
VALUES ($1::int, $2::oid, $3::oid, $4,
        (SELECT )sql" + AttachmentSql("i") + R"sql( FROM pg_catalog.pg_inherits i
         WHERE i.inhrelid = $2::oid AND i.inhparent = $3::oid AND NOT i.inhdetachpending))
ON CONFLICT (source_id, relid) DO NOTHING)sql",
                                                    schema),
                                    {std::to_string(source.id), relid, parent_relid, node}));
  // Captured again: no longer watched as a relation that left
  // (capture/relations.h, NoteLeftRelation).
  TRELLIS_RETURN_IF_ERROR(conn.Exec(
      sql::WithSchema(
          "DELETE FROM {schema}.left_relations WHERE source_id = $1::int AND relid = $2::oid",
          schema),
      {std::to_string(source.id), relid}));
  return CaptureRelation(conn, schema, source, relid);
}

Status Reinstall(pg::Connection& conn, const std::string& schema, const catalog::Source& source) {
  auto names = conn.Query(sql::WithSchema(R"sql(
UPDATE {schema}.sources s SET schema_name = n.nspname, table_name = c.relname
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE s.id = $1::int AND c.oid = s.relid
RETURNING s.relid)sql",
                                          schema),
                          {std::to_string(source.id)});
  if (!names.ok()) return names.status();
  if (names->empty()) {
    return Status::NotFound("source table " +
                            sql::Qualified(source.schema_name, source.table_name) +
                            " no longer exists, so its capture cannot be reinstalled; DROP "
                            "TRANSFORM removes a transform that reads it");
  }
  TRELLIS_RETURN_IF_ERROR(Install(conn, schema, source, names->text(0, 0)));
  // The source's other relations (partitions, children) that still exist.
  auto others = conn.Query(sql::WithSchema(R"sql(
SELECT r.relid FROM {schema}.source_relations r JOIN pg_class c ON c.oid = r.relid
WHERE r.source_id = $1::int AND r.relid <> $2::oid ORDER BY r.relid)sql",
                                           schema),
                           {std::to_string(source.id), names->text(0, 0)});
  if (!others.ok()) return others.status();
  for (size_t r = 0; r < others->size(); ++r) {
    TRELLIS_RETURN_IF_ERROR(CaptureRelation(conn, schema, source, others->text(r, 0)));
  }
  return Status::OK();
}

Status ReleaseIfUnused(pg::Connection& conn, const std::string& schema,
                       const catalog::Source& source) {
  const std::string id = std::to_string(source.id);
  auto readers = conn.Query(
      sql::WithSchema("SELECT count(*) FROM {schema}.transform_inputs WHERE source_id = $1::int",
                      schema),
      {id});
  if (!readers.ok()) return readers.status();
  if (readers->text(0, 0) != "0") return Status::OK();
  // Every relation capture was installed on; its rows go with the source.
  auto relations = conn.Query(sql::WithSchema(R"sql(
SELECT relid FROM {schema}.sources WHERE id = $1::int
UNION SELECT relid FROM {schema}.source_relations WHERE source_id = $1::int)sql",
                                              schema),
                              {id});
  if (!relations.ok()) return relations.status();
  // A relation may be gone already (a disruption); the functions are ours.
  for (size_t r = 0; r < relations->size(); ++r) {
    TRELLIS_RETURN_IF_ERROR(RemoveTriggers(conn, schema, relations->text(r, 0)));
  }
  // Logical capture: out of the publication too, or the slot would go on
  // decoding its changes only to drop them.
  auto published = conn.Query(sql::WithSchema(R"sql(
SELECT format('ALTER PUBLICATION %I DROP TABLE %s', p.pubname, r.prrelid::regclass)
FROM {schema}.capture_feed f
JOIN pg_catalog.pg_publication p ON p.pubname = f.publication_name
JOIN pg_catalog.pg_publication_rel r ON r.prpubid = p.oid
WHERE r.prrelid IN (SELECT relid FROM {schema}.sources WHERE id = $1::int
                    UNION SELECT relid FROM {schema}.source_relations WHERE source_id = $1::int))sql",
                                              schema),
                              {id});
  if (!published.ok()) return published.status();
  for (size_t r = 0; r < published->size(); ++r) {
    TRELLIS_RETURN_IF_ERROR(conn.Exec(published->text(r, 0)));
  }
  TRELLIS_RETURN_IF_ERROR(
      conn.Exec(sql::WithSchema("DELETE FROM {schema}.sources WHERE id = $1::int", schema), {id}));
  TRELLIS_RETURN_IF_ERROR(RemoveFunctions(conn, schema, source.id));
  return conn.Exec(
      sql::WithSchema("DELETE FROM {schema}.capture WHERE source_id = $1::int", schema), {id});
}

}  // namespace trellis::capture
