#include "catalog/chains.h"

#include "catalog/states.h"
#include "sql/quote.h"
#include "trellis/states.h"

namespace trellis::catalog {
namespace {

// (down, up): transform `down` reads the target of transform `up`.
constexpr std::string_view kEdges = R"sql(
  SELECT i.transform_id AS down, up.id AS up
  FROM {schema}.transform_inputs i
  JOIN {schema}.sources s ON s.id = i.source_id
  JOIN {schema}.transforms up
    ON up.target_schema = s.schema_name AND up.target_name = s.table_name)sql";

std::vector<std::string> FirstColumn(const pg::Rows& rows) {
  std::vector<std::string> out;
  for (size_t r = 0; r < rows.size(); ++r) out.push_back(rows.text(r, 0));
  return out;
}

}  // namespace

std::string UpstreamNotLiveSql(const std::string& schema, const std::string& transform_id_expr) {
  // An upstream caught up is live but for the stored word, which the
  // staging worker writes after its current batch: waiting for that word
  // tied the downstream's build to the length of a staging statement (a
  // chain defined back to back waited out one of ~50 s per link).
  return sql::WithSchema("EXISTS (SELECT 1 FROM (" + std::string(kEdges) +
                             ") e JOIN {schema}.transforms up ON up.id = e.up WHERE e.down = " +
                             transform_id_expr + " AND up.status <> '" +
                             std::string(WireName(TransformState::kLive)) + "' AND NOT ",
                         schema) +
         CaughtUpSql(schema, "up") + ")";
}

Result<std::vector<std::string>> PausedUpstreamColumns(pg::Connection& conn,
                                                       const std::string& schema,
                                                       int transform_id) {
  // A column is read when the reading definition names it, bare or quoted,
  // as a whole word: the canonical definition text is the grammar's render,
  // so a name appears there only as an identifier or inside a literal (a
  // literal's false match reports a column that is not read, never hides
  // one that is).
  auto rows = conn.Query(sql::WithSchema(R"sql(
WITH RECURSIVE edge AS ()sql" + std::string(kEdges) +
                                             R"sql(
), chain(down, up, depth) AS (
  SELECT down, up, 1 FROM edge WHERE down = $1::int
  UNION
  SELECT e.down, e.up, c.depth + 1 FROM edge e JOIN chain c ON e.down = c.up WHERE c.depth < 32
)
SELECT DISTINCT up.target_name || '.' || col.name
FROM chain c
JOIN {schema}.transforms d ON d.id = c.down
JOIN {schema}.transforms up ON up.id = c.up
JOIN {schema}.transform_columns col ON col.transform_id = up.id AND col.state = 'paused'
WHERE strpos(d.definition, format('%I', col.name)) > 0
   OR d.definition ~ ('(^|[^[:alnum:]_$])' ||
                      regexp_replace(col.name, '([^[:alnum:]_])', '\\\1', 'g') ||
                      '([^[:alnum:]_$]|$)')
ORDER BY 1)sql",
                                         schema),
                         {std::to_string(transform_id)});
  if (!rows.ok()) return rows.status();
  return FirstColumn(rows.value());
}

Result<std::vector<std::string>> ReadersOf(pg::Connection& conn, const std::string& schema,
                                           int transform_id) {
  auto rows = conn.Query(sql::WithSchema(R"sql(
SELECT DISTINCT d.target_name FROM ()sql" + std::string(kEdges) +
                                             R"sql() e
JOIN {schema}.transforms d ON d.id = e.down
WHERE e.up = $1::int AND e.down <> $1::int ORDER BY 1)sql",
                                         schema),
                         {std::to_string(transform_id)});
  if (!rows.ok()) return rows.status();
  return FirstColumn(rows.value());
}

std::string ReadByOthersSql(const std::string& schema, const std::string& transform_id_expr) {
  return sql::WithSchema("EXISTS (SELECT 1 FROM (" + std::string(kEdges) + ") e WHERE e.up = " +
                             transform_id_expr + " AND e.down <> " + transform_id_expr + ")",
                         schema);
}

Result<std::vector<std::pair<std::string, std::string>>> PendingTargetKey(
    pg::Connection& conn, const std::string& schema, const std::string& relid) {
  auto rows = conn.Query(sql::WithSchema(R"sql(
SELECT k.name, k.sql_type
FROM {schema}.transforms t
JOIN {schema}.target_key_columns k ON k.transform_id = t.id
JOIN pg_catalog.pg_class c ON c.oid = $1::oid AND c.relname = t.target_name
JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace AND n.nspname = t.target_schema
ORDER BY k.ordinal)sql",
                                         schema),
                         {relid});
  if (!rows.ok()) return rows.status();
  std::vector<std::pair<std::string, std::string>> out;
  for (size_t r = 0; r < rows->size(); ++r) out.emplace_back(rows->text(r, 0), rows->text(r, 1));
  return out;
}

}  // namespace trellis::catalog
