#include "catalog/charges.h"

#include "sql/quote.h"

namespace trellis::catalog {

Status ClearCharges(pg::Connection& conn, const std::string& schema, int id,
                    const std::optional<std::vector<std::string>>& columns) {
  const std::string tid = std::to_string(id);
  if (columns) {
    return conn.Exec(sql::WithSchema("DELETE FROM {schema}.quarantined_rows WHERE transform_id = "
                                     "$1::int AND column_name = ANY($2::text[])",
                                     schema),
                     {tid, sql::ArrayLiteral(*columns)});
  }
  TRELLIS_RETURN_IF_ERROR(conn.Exec(
      sql::WithSchema("DELETE FROM {schema}.quarantined_rows WHERE transform_id = $1::int", schema),
      {tid}));
  return conn.Exec(
      sql::WithSchema("DELETE FROM {schema}.held_keys WHERE transform_id = $1::int", schema),
      {tid});
}

}  // namespace trellis::catalog
