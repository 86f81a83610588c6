#include "statements/target_readers.h"

#include "grammar/render.h"
#include "sql/quote.h"

namespace trellis::statements {

Status GrantTargetReaders(pg::Connection& conn, const std::string& schema,
                          const grammar::TransformStmt& stmt) {
  if (stmt.readers.empty() && !stmt.without_row_security) return Status::OK();
  const std::string readers = sql::ArrayLiteral(stmt.readers);
  // PostgreSQL's own error for an unknown role would name no fix.
  auto missing = conn.Query(R"sql(
SELECT r FROM pg_catalog.unnest($1::text[]) WITH ORDINALITY AS u(r, n)
WHERE r <> 'public' AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = r)
ORDER BY n LIMIT 1)sql",
                            {readers});
  if (!missing.ok()) return missing.status();
  if (!missing->empty()) {
    return Status::NotFound("role " + grammar::RenderName(missing->text(0, 0)) +
                            " does not exist: create it before granting it " +
                            grammar::RenderQualified(stmt.target) +
                            ", or leave it out of GRANT SELECT TO");
  }
  auto recorded = conn.Query(
      sql::WithSchema(R"sql(
UPDATE {schema}.transforms SET readers = $2::text[], without_row_security = $3::boolean
WHERE target_name = $1 RETURNING target_schema)sql",
                      schema),
      {stmt.target.name, readers, std::string(stmt.without_row_security ? "true" : "false")});
  if (!recorded.ok()) return recorded.status();
  if (recorded->size() != 1) {
    return Status::Internal("the transform " + grammar::RenderName(stmt.target.name) +
                            " was not found after its define");
  }
  if (stmt.readers.empty()) return Status::OK();
  std::string roles;
  for (const auto& role : stmt.readers) roles += (roles.empty() ? "" : ", ") + sql::Ident(role);
  return conn.Exec("GRANT SELECT ON " + sql::Qualified(recorded->text(0, 0), stmt.target.name) +
                   " TO " + roles);
}

}  // namespace trellis::statements
