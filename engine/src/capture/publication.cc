#include "capture/publication.h"

#include <algorithm>

#include "sql/quote.h"
#include "sql/row_reader.h"

namespace trellis::capture {

Result<std::optional<std::string>> LogicalPublication(pg::Connection& conn,
                                                      const std::string& schema) {
  auto rows = conn.QueryPrepared(sql::WithSchema(
      "SELECT publication_name FROM {schema}.capture_feed WHERE mode = 'logical'", schema));
  if (!rows.ok()) return rows.status();
  if (rows->empty()) return std::optional<std::string>();
  // Logical mode without a slot: the last transform was dropped after this
  // statement's define made sure of one (capture/slot.h). Its writes would
  // reach no stream.
  if (!rows->at(0, 0)) {
    return Status::Validation(
        "capture by logical decoding has no replication slot at the moment (the last transform "
        "was dropped while this statement ran): run the statement again");
  }
  return std::optional<std::string>(rows->text(0, 0));
}

namespace {

// The columns relation `c`'s replica identity sends the old values of (an
// SQL text[]): its primary key's under the default identity, its identity
// index's under USING INDEX, none under NOTHING (FULL sends every column;
// the callers test that apart).
constexpr const char* kIdentityColumnsSql = R"sql(ARRAY(
  SELECT a.attname::text FROM pg_catalog.pg_index i
  JOIN pg_catalog.pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey)
  WHERE i.indrelid = c.oid
    AND ((c.relreplident = 'd' AND i.indisprimary)
      OR (c.relreplident = 'i' AND i.indisreplident))))sql";

}  // namespace

Status PublishRelation(pg::Connection& conn, const std::string& publication,
                       const std::vector<std::string>& routing_columns, const std::string& relid) {
  // A partition of a published partitioned table is published with it, so
  // membership is asked of pg_publication_tables as well as of the
  // relation's own entry.
  auto rows = conn.Query(std::string(R"sql(
SELECT c.relreplident::text, pg_catalog.pg_has_role(c.relowner, 'USAGE'),
       format('%I.%I', n.nspname, c.relname), c.relkind::text,
       )sql") + kIdentityColumnsSql +
                             R"sql(,
       EXISTS (SELECT FROM pg_catalog.pg_publication_rel r
               JOIN pg_catalog.pg_publication p ON p.oid = r.prpubid
               WHERE p.pubname = $2 AND r.prrelid = c.oid)
       OR EXISTS (SELECT FROM pg_catalog.pg_publication_tables t
                  WHERE t.pubname = $2 AND t.schemaname = n.nspname AND t.tablename = c.relname)
FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE c.oid = $1::oid)sql",
                         {relid, publication});
  if (!rows.ok()) return rows.status();
  if (rows->empty()) return Status::OK();  // gone meanwhile: the relation sync sees it
  sql::RowReader row(rows.value(), 0);
  const std::string identity = row.Text(0);
  const bool owns = row.Bool(1);
  const std::string name = row.Text(2);
  const std::string kind = row.Text(3);
  const std::vector<std::string> identity_columns = row.TextArray(4);
  const bool published = row.Bool(5);
  if (!row.status().ok()) return row.status();
  bool routed_by_identity = identity == "f" || !identity_columns.empty();
  for (const auto& column : routing_columns) {
    routed_by_identity =
        routed_by_identity &&
        (identity == "f" || std::find(identity_columns.begin(), identity_columns.end(), column) !=
                                identity_columns.end());
  }
  // A partitioned table holds no rows: its partitions' identities count.
  if (!routed_by_identity && kind != "p") {
    if (!owns) {
      return Status::Validation(
          "capture by logical decoding needs REPLICA IDENTITY FULL on " + name +
          " (its replica identity does not hold every column Trellis routes its changes by), and "
          "Trellis's role does not own it: run ALTER TABLE " +
          name + " REPLICA IDENTITY FULL as its owner, or connect with capture: :triggers");
    }
    TRELLIS_RETURN_IF_ERROR(conn.Exec("ALTER TABLE " + name + " REPLICA IDENTITY FULL"));
  }
  if (published) return Status::OK();
  if (!owns) {
    return Status::Validation(
        "capture by logical decoding publishes each source table, which only its owner may do, "
        "and Trellis's role does not own " +
        name +
        ": grant the role membership in the table's owner, or connect with capture: "
        ":triggers");
  }
  return conn.Exec("ALTER PUBLICATION " + sql::Ident(publication) + " ADD TABLE " + name);
}

namespace {

// Whether a relation under `relid` (an SQL oid expression; itself included) is
// a table whose identity PublishRelation would set to FULL, by the same
// rule: an owned table whose identity is not FULL and does not hold every
// column of `columns` (an SQL text[] expression). Without `columns`, any
// owned table whose identity is not FULL: what some define could need.
std::string NeedsFullIdentitySql(const std::string& relid,
                                 const std::optional<std::string>& columns) {
  // pg_inherits rather than pg_partition_tree, which lists no plain
  // table and no inheritance child.
  std::string sql = R"sql(EXISTS (
  WITH RECURSIVE tree (relid) AS (
    SELECT )sql" + relid +
                    R"sql(
    UNION SELECT i.inhrelid FROM pg_catalog.pg_inherits i JOIN tree ON i.inhparent = tree.relid)
  SELECT FROM tree t
  JOIN pg_catalog.pg_class c ON c.oid = t.relid
  CROSS JOIN LATERAL (SELECT )sql" +
                    kIdentityColumnsSql + R"sql( AS columns) ident
  WHERE c.relkind = 'r' AND c.relreplident <> 'f'
    AND pg_catalog.pg_has_role(c.relowner, 'USAGE'))sql";
  if (columns) {
    sql += "\n    AND (cardinality(ident.columns) = 0 OR NOT (" + *columns + " <@ ident.columns))";
  }
  return sql + ")";
}

}  // namespace

Status ClaimIdentityChange(pg::Connection& conn, const std::string& schema,
                           const std::string& relid,
                           const std::vector<std::string>& routing_columns) {
  auto publication = LogicalPublication(conn, schema);
  if (!publication.ok()) return publication.status();
  if (!publication.value()) return Status::OK();
  // The layout the source will have: what its readers route by now (none
  // for a table no transform reads yet: its key, which its identity holds)
  // and the columns this define adds.
  const std::string wanted = sql::WithSchema(
      "(coalesce((SELECT s.routing_columns FROM {schema}.sources s WHERE s.relid = $1::oid), "
      "'{}') || $2::text[])",
      schema);
  auto lock = conn.Query(
      "SELECT format('LOCK TABLE %s IN ACCESS EXCLUSIVE MODE NOWAIT', "
      "$1::oid::regclass) WHERE " +
          NeedsFullIdentitySql("$1::oid", wanted),
      {relid, sql::ArrayLiteral(routing_columns)});
  if (!lock.ok()) return lock.status();
  if (lock->empty()) return Status::OK();
  return conn.Exec(lock->text(0, 0));
}

Status LockForIdentityChanges(pg::Connection& conn, const std::vector<std::string>& relids) {
  if (relids.empty()) return Status::OK();
  // In ascending oid order, as every other taker of several tables' locks.
  auto locks = conn.Query(
      "SELECT format('LOCK TABLE %s IN ACCESS EXCLUSIVE MODE', r.oid::regclass) "
      "FROM pg_catalog.pg_class r WHERE r.oid = ANY ($1::oid[]) AND " +
          NeedsFullIdentitySql("r.oid", std::nullopt) + " ORDER BY r.oid",
      {sql::ArrayLiteral(relids)});
  if (!locks.ok()) return locks.status();
  for (size_t r = 0; r < locks->size(); ++r) {
    TRELLIS_RETURN_IF_ERROR(conn.Exec(locks->text(r, 0)));
  }
  return Status::OK();
}

Status PublishSource(pg::Connection& conn, const std::string& schema,
                     const std::string& publication, const catalog::Source& source) {
  // The table first: publishing it publishes its partitions with it.
  auto relations = conn.Query(sql::WithSchema(R"sql(
SELECT relid::text, 0 FROM {schema}.sources WHERE id = $1::int
UNION SELECT relid::text, 1 FROM {schema}.source_relations WHERE source_id = $1::int
ORDER BY 2, 1)sql",
                                              schema),
                              {std::to_string(source.id)});
  if (!relations.ok()) return relations.status();
  for (size_t r = 0; r < relations->size(); ++r) {
    TRELLIS_RETURN_IF_ERROR(
        PublishRelation(conn, publication, source.routing_columns, relations->text(r, 0)));
  }
  return Status::OK();
}

}  // namespace trellis::capture
