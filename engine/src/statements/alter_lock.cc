#include "statements/alter_lock.h"

#include "sql/quote.h"
#include "sql/row_reader.h"
#include "workers/locks.h"

namespace trellis::statements {
namespace {

// The transforms an ALTER of `$1` changes, read without locks: the
// transform and its stages (the hidden join a GROUP BY over a join reads).
constexpr std::string_view kAlteredIdsSql = R"sql(
SELECT t.id FROM {schema}.transforms t WHERE t.target_name = $1
UNION
SELECT s.id FROM {schema}.transforms g JOIN {schema}.transforms s ON s.owner_id = g.id
WHERE g.target_name = $1 AND g.owner_id IS NULL
ORDER BY 1)sql";

}  // namespace

Result<std::vector<int>> AlteredTransformIds(pg::Connection& conn, const std::string& schema,
                                             const std::string& name) {
  auto rows = conn.Query(sql::WithSchema(kAlteredIdsSql, schema), {name});
  if (!rows.ok()) return rows.status();
  std::vector<int> ids;
  for (size_t r = 0; r < rows->size(); ++r) {
    sql::RowReader row(rows.value(), r);
    ids.push_back(row.Int(0));
    if (!row.status().ok()) return row.status();
  }
  return ids;
}

Result<std::vector<int>> LockAlteredTransforms(pg::Connection& conn, const std::string& schema,
                                               const std::string& name) {
  auto ids = AlteredTransformIds(conn, schema, name);
  if (!ids.ok()) return ids.status();
  // One statement per lock, in the order read: ascending, as any other
  // holder of two of these locks would take them.
  for (int id : ids.value()) {
    TRELLIS_RETURN_IF_ERROR(
        conn.Exec("SELECT pg_advisory_xact_lock(" + workers::TransformLockSpace() + ", $2::int)",
                  {schema, std::to_string(id)}));
  }
  return ids;
}

}  // namespace trellis::statements
