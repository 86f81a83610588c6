#include "capture/row_security.h"

#include "grammar/derived.h"
#include "grammar/render.h"
#include "sql/quote.h"
#include "sql/row_reader.h"

namespace trellis::capture {
namespace {

// $1: the statement's tables as it writes them. Every relation under each
// counts: the target holds a partition's or child's rows too, and a policy
// on one of them guards reads that name it.
constexpr const char* kFirstSecuredSql = R"sql(
WITH RECURSIVE under(relid) AS (
  SELECT r FROM pg_catalog.unnest($1::text[]) n, pg_catalog.to_regclass(n) r
  WHERE r IS NOT NULL
  UNION
  SELECT i.inhrelid FROM pg_catalog.pg_inherits i JOIN under u ON i.inhparent = u.relid
)
SELECT pg_catalog.format('%I.%I', n.nspname, c.relname)
FROM under u
JOIN pg_catalog.pg_class c ON c.oid = u.relid
JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE c.relrowsecurity
ORDER BY 1 LIMIT 1)sql";

// Each transform a user defined that did not accept row security, with the
// sources it reads: its own inputs and its stages' (a stage's reads are its
// owner's); then every relation captured for those sources. $1: one
// transform's id, or NULL.
constexpr const char* kExposuresSql = R"sql(
WITH reads(transform_id, source_id) AS (
  SELECT coalesce(t.owner_id, t.id), i.source_id
  FROM {schema}.transform_inputs i JOIN {schema}.transforms t ON t.id = i.transform_id
)
SELECT DISTINCT t.target_name, pg_catalog.format('%I.%I', n.nspname, c.relname)
FROM reads r
JOIN {schema}.transforms t ON t.id = r.transform_id
JOIN {schema}.source_relations sr ON sr.source_id = r.source_id
JOIN pg_catalog.pg_class c ON c.oid = sr.relid
JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE c.relrowsecurity AND NOT t.without_row_security AND ($1::int IS NULL OR t.id = $1::int)
ORDER BY 1, 2)sql";

}  // namespace

Status RefuseRowSecurity(pg::Connection& conn, const grammar::TransformStmt& stmt) {
  if (stmt.without_row_security) return Status::OK();
  // A name a WITH query took (grammar/derived.h), or the query in FROM, is
  // read from that query's hidden stage, whose own tables are checked when
  // it is defined: a table of the same name is not read.
  const std::size_t visible = stmt.with.size();
  std::vector<std::string> tables;
  if (stmt.derived.empty() && !grammar::WithQueryNamed(stmt, stmt.source.table, visible)) {
    tables.push_back(grammar::RenderQualified(stmt.source.table));
  }
  for (const auto& join : stmt.joins) {
    if (!grammar::WithQueryNamed(stmt, join.table.table, visible)) {
      tables.push_back(grammar::RenderQualified(join.table.table));
    }
  }
  auto secured = conn.Query(kFirstSecuredSql, {sql::ArrayLiteral(tables)});
  if (!secured.ok()) return secured.status();
  if (secured->empty()) return Status::OK();
  const std::string target = grammar::RenderQualified(stmt.target);
  return Status::Validation(
      "table " + secured->text(0, 0) +
      " has row-level security enabled, and a transform copies rows past it: whoever can read " +
      target +
      " would read every row the engine's role sees, whatever the table's policies allow them. "
      "Read from a table without row-level security, or add WITHOUT ROW SECURITY to the "
      "TRANSFORM to accept that (and grant the target only to roles that may see every row)");
}

Result<std::vector<RowSecurityExposure>> FindRowSecurityExposures(pg::Connection& conn,
                                                                  const std::string& schema,
                                                                  std::optional<int> transform_id) {
  std::optional<std::string> id;
  if (transform_id) id = std::to_string(*transform_id);
  auto rows = conn.Query(sql::WithSchema(kExposuresSql, schema), {id});
  if (!rows.ok()) return rows.status();
  std::vector<RowSecurityExposure> found;
  for (size_t r = 0; r < rows->size(); ++r) {
    found.push_back({grammar::RenderName(rows->text(r, 0)), rows->text(r, 1)});
  }
  return found;
}

}  // namespace trellis::capture
