#include "capture/function_settings.h"

#include "capture/names.h"
#include "pg/session_settings.h"
#include "sql/quote.h"
#include "sql/row_reader.h"

namespace trellis::capture {
namespace {

// CTEs ending in `needs` (id, pinned): for each source in $1::int[], whether
// some routed column's text depends on a session setting. Domains are
// followed to their base type and arrays to their element type; what is
// left must be an enum (its text is its label) or one of the built-in types
// listed, whose output functions read no setting. Everything else pins:
// date and time types, interval, float4/8 and the geometric types built on
// them, bytea, money, the reg* types, composites, ranges and any type from
// an extension, whose output function could read anything. A source with a
// routed column not found (dropped or renamed) pins too.
std::string NeedsSql(const std::string& schema) {
  return sql::WithSchema(R"sql(
routed AS (
  SELECT s.id, a.atttypid AS type,
         count(*) OVER (PARTITION BY s.id) = cardinality(s.routing_columns) AS complete
  FROM {schema}.sources s
  JOIN pg_catalog.pg_attribute a
    ON a.attrelid = s.relid
   AND a.attname = ANY (s.routing_columns::pg_catalog.name[])
   AND a.attnum > 0 AND NOT a.attisdropped
  WHERE s.id = ANY ($1::int[])
), walked AS (
  SELECT id, type FROM routed
  UNION
  SELECT w.id, CASE t.typtype WHEN 'd' THEN t.typbasetype ELSE t.typelem END
  FROM walked w JOIN pg_catalog.pg_type t ON t.oid = w.type
  WHERE t.typtype = 'd' OR t.typcategory = 'A'
), stable AS (
  SELECT w.id,
         t.typtype = ANY ('{d,e}'::"char"[])
         OR t.typcategory = 'A'
         OR (t.typnamespace = 'pg_catalog'::pg_catalog.regnamespace
             AND t.typname = ANY ('{bool,char,name,int2,int4,int8,oid,xid,xid8,
               cid,text,varchar,bpchar,numeric,uuid,json,jsonb,bit,varbit,inet,cidr,macaddr,
               macaddr8,pg_lsn}'::pg_catalog.name[])) AS ok
  FROM walked w JOIN pg_catalog.pg_type t ON t.oid = w.type
), needs AS (
  SELECT x.id,
         coalesce(NOT bool_and(s.ok) OR NOT bool_and(r.complete), true) AS pinned
  FROM unnest($1::int[]) AS x(id)
  LEFT JOIN stable s ON s.id = x.id
  LEFT JOIN (SELECT DISTINCT id, complete FROM routed) r ON r.id = x.id
  GROUP BY x.id
))sql",
                         schema);
}

}  // namespace

Result<bool> NeedsPinnedSettings(pg::Connection& conn, const std::string& schema, int source_id) {
  auto rows = conn.Query("WITH RECURSIVE " + NeedsSql(schema) + " SELECT pinned FROM needs",
                         {"{" + std::to_string(source_id) + "}"});
  if (!rows.ok()) return rows.status();
  sql::RowReader row(rows.value(), 0);
  const bool pinned = row.Bool(0);
  if (!row.status().ok()) return row.status();
  return pinned;
}

std::string SetClauses(bool pinned) {
  if (!pinned) return "";
  std::string clauses = " SET search_path = pg_catalog, pg_temp";
  for (const pg::PinnedSetting& setting : pg::kTextFormSettings) {
    clauses += " SET " + std::string(setting.name) + " = " + sql::Literal(setting.value);
  }
  return clauses;
}

Result<std::vector<catalog::Source>> SourcesWithStalePins(pg::Connection& conn,
                                                          const std::string& schema) {
  auto ids = conn.Query(sql::WithSchema("SELECT id FROM {schema}.sources ORDER BY id", schema));
  if (!ids.ok()) return ids.status();
  std::vector<std::string> source_ids, functions;
  for (size_t r = 0; r < ids->size(); ++r) {
    sql::RowReader row(ids.value(), r);
    const int id = row.Int(0);
    if (!row.status().ok()) return row.status();
    source_ids.push_back(std::to_string(id));
    functions.push_back(QualifiedFunctionName(schema, id, "insert") + "()");
  }
  if (source_ids.empty()) return std::vector<catalog::Source>{};
  // The insert function stands for all four: they are installed together.
  // A source without one (released) is not in `installed`.
  auto stale = conn.Query("WITH RECURSIVE " + NeedsSql(schema) +
                              sql::WithSchema(R"sql(,
installed AS (
  SELECT x.id, p.proconfig IS NOT NULL AS pinned
  FROM unnest($1::int[], $2::text[]) AS x(id, fn)
  JOIN pg_catalog.pg_proc p ON p.oid = pg_catalog.to_regprocedure(x.fn)
)
SELECT s.id, s.routing_columns
FROM installed i JOIN needs n ON n.id = i.id JOIN {schema}.sources s ON s.id = i.id
WHERE i.pinned <> n.pinned
ORDER BY s.id
FOR UPDATE OF s SKIP LOCKED)sql",
                                              schema),
                          {sql::ArrayLiteral(source_ids), sql::ArrayLiteral(functions)});
  if (!stale.ok()) return stale.status();
  std::vector<catalog::Source> out;
  for (size_t r = 0; r < stale->size(); ++r) {
    sql::RowReader row(stale.value(), r);
    catalog::Source source;
    source.id = row.Int(0);
    source.routing_columns = row.TextArray(1);
    if (!row.status().ok()) return row.status();
    out.push_back(std::move(source));
  }
  return out;
}

}  // namespace trellis::capture
