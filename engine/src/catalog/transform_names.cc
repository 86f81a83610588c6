#include "catalog/transform_names.h"

#include "sql/quote.h"

namespace trellis::catalog {

Result<std::vector<std::string>> TransformNames(pg::Connection& conn, const std::string& schema) {
  auto rows = conn.Query(
      sql::WithSchema("SELECT target_name FROM {schema}.transforms ORDER BY target_name", schema));
  if (!rows.ok()) return rows.status();
  std::vector<std::string> names;
  for (size_t r = 0; r < rows->size(); ++r) names.push_back(rows->text(r, 0));
  return names;
}

}  // namespace trellis::catalog
