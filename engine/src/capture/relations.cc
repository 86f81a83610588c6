#include "capture/relations.h"

#include "capture/attachment.h"
#include "capture/sources.h"
#include "capture/triggers.h"
#include "sql/quote.h"
#include "sql/row_reader.h"

namespace trellis::capture {
namespace {

// The signature of relation `relid`'s catalog rows: the transaction ids
// that last wrote its pg_class row (ATTACH and DETACH PARTITION rewrite it)
// and its columns' pg_attribute rows (INHERIT and NO INHERIT rewrite their
// inheritance counts). NULL when the relation is gone. Another change to
// the table (a column added) changes it too, which costs one needless
// correction, never a missed one.
std::string RelationSignatureSql(const std::string& relid) {
  return "(SELECT c.xmin::text || ':' || coalesce((SELECT string_agg(a.xmin::text, ',' ORDER BY "
         "a.attnum) FROM pg_catalog.pg_attribute a WHERE a.attrelid = c.oid AND a.attnum > 0), "
         "'') FROM pg_catalog.pg_class c WHERE c.oid = " +
         relid + ")";
}

// The relations under every source's table, at any depth, each with the
// parent it hangs from and the attachment that links it (capture/
// attachment.h). pg_inherits has no cycles, so the recursion ends.
std::string TreeSql() {
  return R"sql(
WITH RECURSIVE tree(source_id, relid, parent_relid, attachment) AS (
  -- A partition being detached CONCURRENTLY is gone for every new
  -- snapshot of the source already (and may stay so, if the detach was
  -- interrupted): it counts as detached.
  SELECT s.id, i.inhrelid, i.inhparent, )sql" +
         AttachmentSql("i") + R"sql(
  FROM {schema}.sources s
  JOIN pg_catalog.pg_inherits i ON i.inhparent = s.relid AND NOT i.inhdetachpending
  UNION ALL
  SELECT t.source_id, i.inhrelid, i.inhparent, )sql" +
         AttachmentSql("i") + R"sql(
  FROM tree t JOIN pg_catalog.pg_inherits i ON i.inhparent = t.relid AND NOT i.inhdetachpending
), captured AS (
  -- The relations capture covers besides each source's own table, for the
  -- sources whose table still exists (a source that is gone is a
  -- disruption, capture/disruption.h).
  SELECT r.source_id, r.relid, r.parent_relid, r.attachment, r.node
  FROM {schema}.source_relations r
  JOIN {schema}.sources s ON s.id = r.source_id
  JOIN pg_catalog.pg_class sc ON sc.oid = s.relid
  WHERE r.relid <> s.relid
), changes AS (
  SELECT t.source_id, t.relid, t.parent_relid,
         format('%I.%I', n.nspname, c.relname) AS node, 'added' AS change, false AS unseen
  FROM tree t
  JOIN pg_catalog.pg_class c ON c.oid = t.relid
  JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
  WHERE NOT EXISTS (SELECT 1 FROM {schema}.source_relations r WHERE r.relid = t.relid)
  UNION ALL
  SELECT k.source_id, k.relid, NULL::oid,
         CASE WHEN c.oid IS NULL THEN coalesce(k.node, k.relid::text)
              ELSE format('%I.%I', n.nspname, c.relname) END,
         CASE WHEN c.oid IS NULL THEN 'dropped' ELSE 'detached' END, false
  FROM captured k
  LEFT JOIN pg_catalog.pg_class c ON c.oid = k.relid
  LEFT JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
  WHERE NOT EXISTS (SELECT 1 FROM tree t WHERE t.source_id = k.source_id AND t.relid = k.relid)
  UNION ALL
  -- Under the source still, but not by the link capture recorded (a NULL
  -- attachment never matches): re-attached since.
  SELECT k.source_id, k.relid,
         (SELECT min(t.parent_relid) FROM tree t
          WHERE t.source_id = k.source_id AND t.relid = k.relid),
         format('%I.%I', n.nspname, c.relname), 'relinked', false
  FROM captured k
  JOIN pg_catalog.pg_class c ON c.oid = k.relid
  JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
  WHERE EXISTS (SELECT 1 FROM tree t WHERE t.source_id = k.source_id AND t.relid = k.relid)
    AND NOT EXISTS (SELECT 1 FROM tree t
                    WHERE t.source_id = k.source_id AND t.relid = k.relid
                      AND t.parent_relid = k.parent_relid AND t.attachment = k.attachment)
  UNION ALL
  -- A detach seen pending that is final now (its link gone, or replaced by
  -- a new attachment): its second transaction has committed, after every
  -- writer that could still change the relation's rows through the source.
  SELECT d.source_id, d.relid, NULL::oid, d.node, 'detach finished', false
  FROM {schema}.pending_detaches d
  WHERE NOT EXISTS (SELECT 1 FROM pg_catalog.pg_inherits i
                    WHERE i.inhrelid = d.relid AND i.inhdetachpending)
  UNION ALL
  -- Linked by a detach pending (CONCURRENTLY) that capture never recorded:
  -- attached and being detached, both since the last round.
  SELECT p.source_id, i.inhrelid, NULL::oid, format('%I.%I', n.nspname, c.relname), 'detached',
         true
  FROM (SELECT s.id AS source_id, s.relid FROM {schema}.sources s
        UNION SELECT t.source_id, t.relid FROM tree t) AS p
  JOIN pg_catalog.pg_inherits i ON i.inhparent = p.relid AND i.inhdetachpending
  JOIN pg_catalog.pg_class c ON c.oid = i.inhrelid
  JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
  WHERE NOT EXISTS (SELECT 1 FROM {schema}.source_relations r
                    WHERE r.source_id = p.source_id AND r.relid = i.inhrelid)
    AND NOT EXISTS (SELECT 1 FROM {schema}.pending_detaches d
                    WHERE d.source_id = p.source_id AND d.relid = i.inhrelid)
  UNION ALL
  -- A relation that left the source before, out of it now, whose catalog
  -- rows changed since: linked again and unlinked again between two rounds
  -- (left_relations, catalog step 24).
  SELECT w.source_id, w.relid, NULL::oid, format('%I.%I', n.nspname, c.relname), 'detached',
         true
  FROM {schema}.left_relations w
  JOIN pg_catalog.pg_class c ON c.oid = w.relid
  JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
  WHERE w.signature IS DISTINCT FROM )sql" +
         RelationSignatureSql("w.relid") + R"sql(
    AND NOT EXISTS (SELECT 1 FROM tree t WHERE t.source_id = w.source_id AND t.relid = w.relid)
    AND NOT EXISTS (SELECT 1 FROM {schema}.source_relations r
                    WHERE r.source_id = w.source_id AND r.relid = w.relid)
    AND NOT EXISTS (SELECT 1 FROM {schema}.pending_detaches d
                    WHERE d.source_id = w.source_id AND d.relid = w.relid)
    AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_inherits i
                    WHERE i.inhrelid = w.relid AND i.inhdetachpending)
))sql";
}

}  // namespace

std::string_view ChangeName(RelationChange change) {
  switch (change) {
    case RelationChange::kAdded:
      return "added";
    case RelationChange::kDetached:
      return "detached";
    case RelationChange::kDropped:
      return "dropped";
    case RelationChange::kRelinked:
      return "re-attached";
    case RelationChange::kDetachFinished:
      return "detach finished";
  }
  return "added";
}

Result<std::vector<RelationEvent>> FindRelationChanges(pg::Connection& conn,
                                                       const std::string& schema) {
  auto rows = conn.Query(sql::WithSchema(TreeSql() + R"sql(
SELECT source_id, relid, parent_relid, node, change, unseen FROM changes
ORDER BY source_id, relid)sql",
                                         schema));
  if (!rows.ok()) return rows.status();
  std::vector<RelationEvent> out;
  for (size_t r = 0; r < rows->size(); ++r) {
    sql::RowReader row(rows.value(), r);
    RelationEvent e;
    e.source_id = row.Int(0);
    e.relid = row.Text(1);
    e.parent_relid = row.Text(2);
    e.node = row.Text(3);
    const std::string change = row.Text(4);
    e.change = change == "added"             ? RelationChange::kAdded
               : change == "detached"        ? RelationChange::kDetached
               : change == "relinked"        ? RelationChange::kRelinked
               : change == "detach finished" ? RelationChange::kDetachFinished
                                             : RelationChange::kDropped;
    e.unseen = row.Bool(5);
    TRELLIS_RETURN_IF_ERROR(row.status());
    out.push_back(std::move(e));
  }
  return out;
}

std::string CapturedUnderSourceSql(const std::string& schema, const std::string& row) {
  // Uncorrelated, so PostgreSQL walks the relations once per statement and
  // probes a hash of them per capture row (a correlated walk per row would
  // cost every captured statement an index lookup or more). Each step down
  // must be a relation capture covers, linked now by the link capture saw:
  // until the relation sync has applied a re-attach, writes naming the
  // relation (or one under it) may be from while it was out.
  return "coalesce((" + row + ".source_id, " + row + ".relid) IN (" +
         sql::WithSchema(R"sql(
  WITH RECURSIVE under(source_id, relid) AS (
    SELECT s.id, s.relid FROM {schema}.sources s
    UNION
    SELECT u.source_id, i.inhrelid FROM under u
    JOIN pg_catalog.pg_inherits i ON i.inhparent = u.relid AND NOT i.inhdetachpending
    JOIN {schema}.source_relations r ON r.source_id = u.source_id AND r.relid = i.inhrelid
     AND r.parent_relid = i.inhparent AND r.attachment = )sql" +
                             AttachmentSql("i") + R"sql()
  SELECT source_id, relid FROM under)sql",
                         schema) +
         "), false)";
}

std::string PendingRelationsOfTransformSql(const std::string& schema) {
  return sql::WithSchema(TreeSql() + R"sql(
SELECT DISTINCT c.node FROM changes c
JOIN {schema}.transform_inputs i ON i.source_id = c.source_id
WHERE i.transform_id = $1::int ORDER BY c.node)sql",
                         schema);
}

std::string RelationsOutOfStepSql(const std::string& schema) {
  return sql::WithSchema(TreeSql() + "\nSELECT EXISTS (SELECT 1 FROM changes)", schema);
}

Status CaptureRelationsUnder(pg::Connection& conn, const std::string& schema,
                             const catalog::Source& source, const std::string& table_relid) {
  auto rows = conn.Query(sql::WithSchema(R"sql(
WITH RECURSIVE tree(relid, parent_relid) AS (
  SELECT inhrelid, inhparent FROM pg_catalog.pg_inherits
  WHERE inhparent = $1::oid AND NOT inhdetachpending
  UNION ALL
  SELECT i.inhrelid, i.inhparent FROM tree t
  JOIN pg_catalog.pg_inherits i ON i.inhparent = t.relid AND NOT i.inhdetachpending
)
SELECT t.relid, t.parent_relid, format('%I.%I', n.nspname, c.relname),
       EXISTS (SELECT 1 FROM {schema}.source_relations r
               WHERE r.relid = t.relid AND r.source_id <> $2::int)
FROM tree t
JOIN pg_catalog.pg_class c ON c.oid = t.relid
JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
ORDER BY t.relid)sql",
                                         schema),
                         {table_relid, std::to_string(source.id)});
  if (!rows.ok()) return rows.status();
  for (size_t r = 0; r < rows->size(); ++r) {
    if (rows->text(r, 3) == "t") {
      return Status::Validation(
          "table " + rows->text(r, 2) + " under source table " +
          sql::Qualified(source.schema_name, source.table_name) +
          " also inherits from another table a transform reads, and Trellis captures a table "
          "for one source only: give it a single parent");
    }
    TRELLIS_RETURN_IF_ERROR(
        AddRelation(conn, schema, source, rows->text(r, 0), rows->text(r, 1), rows->text(r, 2)));
  }
  return Status::OK();
}

Status ForgetRelation(pg::Connection& conn, const std::string& schema, int source_id,
                      const std::string& relid) {
  TRELLIS_RETURN_IF_ERROR(RemoveTriggers(conn, schema, relid));
  TRELLIS_RETURN_IF_ERROR(conn.Exec(
      sql::WithSchema(
          "DELETE FROM {schema}.source_relations WHERE source_id = $1::int AND relid = $2::oid",
          schema),
      {std::to_string(source_id), relid}));
  return NoteLeftRelation(conn, schema, source_id, relid);
}

Status NoteLeftRelation(pg::Connection& conn, const std::string& schema, int source_id,
                        const std::string& relid) {
  return conn.Exec(sql::WithSchema(R"sql(
WITH sig AS (SELECT )sql" + RelationSignatureSql("$2::oid") +
                                       R"sql( AS signature),
gone AS (
  DELETE FROM {schema}.left_relations
  WHERE source_id = $1::int AND relid = $2::oid AND (SELECT signature FROM sig) IS NULL)
INSERT INTO {schema}.left_relations AS w (source_id, relid, signature)
SELECT $1::int, $2::oid, signature FROM sig WHERE signature IS NOT NULL
ON CONFLICT (source_id, relid) DO UPDATE SET signature = EXCLUDED.signature, left_at = now())sql",
                                   schema),
                   {std::to_string(source_id), relid});
}

Result<bool> DetachPending(pg::Connection& conn, const std::string& relid) {
  auto pending = conn.Query(
      "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_inherits "
      "WHERE inhrelid = $1::oid AND inhdetachpending)",
      {relid});
  if (!pending.ok()) return pending.status();
  return pending->text(0, 0) == "t";
}

Status RecordPendingDetach(pg::Connection& conn, const std::string& schema, int source_id,
                           const std::string& relid, const std::string& node) {
  return conn.Exec(sql::WithSchema(R"sql(
INSERT INTO {schema}.pending_detaches (source_id, relid, node) VALUES ($1::int, $2::oid, $3)
ON CONFLICT (source_id, relid) DO NOTHING)sql",
                                   schema),
                   {std::to_string(source_id), relid, node});
}

Status ForgetPendingDetach(pg::Connection& conn, const std::string& schema, int source_id,
                           const std::string& relid) {
  return conn.Exec(
      sql::WithSchema(
          "DELETE FROM {schema}.pending_detaches WHERE source_id = $1::int AND relid = $2::oid",
          schema),
      {std::to_string(source_id), relid});
}

}  // namespace trellis::capture
