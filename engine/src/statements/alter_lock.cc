#include "statements/alter_lock.h"

#include "sql/quote.h"
#include "sql/row_reader.h"
#include "workers/locks.h"

namespace trellis::statements {
namespace {

// The transforms an ALTER of `$2` changes, read without locks: the
// transform, and the hidden join a GROUP BY over a join reads (its FROM is
// a table in the catalog schema `$1` that a transform targets; as
// alter_group_join.cc finds it).
constexpr std::string_view kAlteredIdsSql = R"sql(
SELECT t.id FROM {schema}.transforms t WHERE t.target_name = $2
UNION
SELECT j.id FROM {schema}.transforms g
JOIN {schema}.transform_inputs i ON i.transform_id = g.id AND i.ordinal = 1
JOIN {schema}.sources s ON s.id = i.source_id
JOIN {schema}.transforms j ON j.target_schema = s.schema_name AND j.target_name = s.table_name
WHERE g.target_name = $2 AND g.target_schema <> $1 AND j.target_schema = $1
ORDER BY 1)sql";

}  // namespace

Result<std::vector<int>> AlteredTransformIds(pg::Connection& conn, const std::string& schema,
                                             const std::string& name) {
  auto rows = conn.Query(sql::WithSchema(kAlteredIdsSql, schema), {schema, name});
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
