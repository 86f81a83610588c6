#include "reads/dump_privileges.h"

#include "sql/quote.h"

namespace trellis::reads {
namespace {

// Rendered by the server, as the rest of the dump is (format's %L and %I
// quote as the loading server reads them). A DO block's body is a plain
// string literal here (%L), never a dollar quote, so no role or table name
// can end it. $1: the quoted catalog schema.
constexpr const char* kRenderGrantsSql = R"sql(
SELECT line FROM (
  SELECT 1 AS part, id, 0 AS ordinal, pg_catalog.format(
    'UPDATE %s.transforms SET readers = %L, without_row_security = %L WHERE id = %s;',
    $1::text, readers, without_row_security, id) AS line
  FROM {schema}.transforms
  WHERE readers <> '{}' OR without_row_security
  UNION ALL
  SELECT 2, t.id, r.n, pg_catalog.format('DO %L;', pg_catalog.format(
    'BEGIN IF %L = ''public'' OR EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = %L) '
    'THEN GRANT SELECT ON %I.%I TO %I; '
    'ELSE RAISE WARNING ''Trellis: role %% does not exist here, so it is not granted '
    'SELECT on %%'', %L, %L; END IF; END',
    r.role, r.role, t.target_schema, t.target_name, r.role,
    r.role, pg_catalog.format('%I.%I', t.target_schema, t.target_name)))
  FROM {schema}.transforms t, pg_catalog.unnest(t.readers) WITH ORDINALITY AS r(role, n)
) lines ORDER BY part, id, ordinal)sql";

}  // namespace

Result<std::string> DumpTargetPrivilegesSql(pg::Connection& conn, const std::string& schema) {
  auto lines = conn.Query(sql::WithSchema(kRenderGrantsSql, schema), {sql::Ident(schema)});
  if (!lines.ok()) return lines.status();
  std::string out;
  for (size_t r = 0; r < lines->size(); ++r) out += lines->text(r, 0) + "\n";
  return out;
}

}  // namespace trellis::reads
