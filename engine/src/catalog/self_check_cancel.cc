#include "catalog/self_check_cancel.h"

#include "sql/quote.h"

namespace trellis::catalog {

Status CancelSelfCheck(pg::Connection& conn, const std::string& schema, int transform_id,
                       const std::string& reason) {
  return conn.Exec(sql::WithSchema(R"sql(
UPDATE {schema}.self_check_jobs SET state = 'cancelled', finished_at = now(), error = $2
WHERE transform_id = $1::int AND state IN ('queued', 'running'))sql",
                                   schema),
                   {std::to_string(transform_id), reason});
}

}  // namespace trellis::catalog
