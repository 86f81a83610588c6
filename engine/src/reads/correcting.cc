#include "reads/correcting.h"

#include "capture/relations.h"
#include "sql/quote.h"
#include "sql/row_reader.h"

namespace trellis::reads {

Result<std::vector<CorrectingNodeStatus>> ReadCorrecting(pg::Connection& conn,
                                                         const std::string& schema,
                                                         int transform_id) {
  auto rows = conn.Query(sql::WithSchema(R"sql(
SELECT c.node, (extract(epoch FROM c.since) * 1000000)::bigint, sum(p.key_count)
FROM {schema}.corrections c
JOIN {schema}.pages p ON p.id = ANY (c.page_ids)
WHERE c.transform_id = $1::int
GROUP BY c.id, c.node, c.since ORDER BY c.id)sql",
                                         schema),
                         {std::to_string(transform_id)});
  if (!rows.ok()) return rows.status();
  std::vector<CorrectingNodeStatus> out;
  for (size_t r = 0; r < rows->size(); ++r) {
    sql::RowReader row(rows.value(), r);
    out.push_back(CorrectingNodeStatus{row.Text(0), row.Int64(1), row.Int64(2)});
    if (!row.status().ok()) return row.status();
  }
  // A change the staging worker has not applied yet (a partition attached a
  // moment ago, or one whose capture cannot be installed: a lock never free,
  // a table the engine's role does not own) is listed too, with no start:
  // its writes may be missing from the target until it is applied.
  auto pending =
      conn.Query(capture::PendingRelationsOfTransformSql(schema), {std::to_string(transform_id)});
  if (!pending.ok()) return pending.status();
  for (size_t r = 0; r < pending->size(); ++r) {
    out.push_back(CorrectingNodeStatus{pending->text(r, 0), std::nullopt, 0});
  }
  return out;
}

}  // namespace trellis::reads
