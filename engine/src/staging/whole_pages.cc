#include "staging/whole_pages.h"

#include <spdlog/fmt/fmt.h>

#include "plan/path_model.h"
#include "sql/quote.h"

namespace trellis::staging {

std::string WholeTransformsSql(const std::string& schema,
                               const std::vector<WholeCandidate>& candidates, long floor) {
  std::vector<std::string> rows;
  for (const auto& c : candidates) {
    std::vector<std::string> sources;
    for (const auto& input : c.transform->inputs)
      sources.push_back(std::to_string(input.source.id));
    if (sources.empty()) continue;
    // The CASE reads the estimate (subqueries of the catalog and of
    // pg_class) only for a batch past the floor. A TRUNCATE of an input
    // stages a built transform whole whatever the size: its keys are gone
    // from the capture (one mid-first-build is restarted instead:
    // catalog::RequestRebuild, in stage_batch.cc).
    rows.push_back(fmt::format(
        "SELECT {0}::int AS transform_id, v.versions FROM (SELECT coalesce(sum(c.versions), 0)"
        "::bigint AS versions, bool_or(c.op = 'T') AS truncated FROM consumed c"
        " WHERE c.source_id IN ({1})) AS v\n"
        "  WHERE CASE WHEN v.truncated THEN EXISTS (SELECT 1 FROM {6} WHERE id = {0} AND "
        "key_indexed) WHEN v.versions < {2} THEN false ELSE v.versions * {3} > {4} END AND {5}",
        c.transform->id, sql::Join(sources, ", "), floor, plan::kStageUsPerVersion,
        plan::RebuildEstimateUsSql(*c.plan, *c.transform, schema), c.gate,
        sql::Qualified(schema, "transforms")));
  }
  if (rows.empty()) return "SELECT NULL::int AS transform_id, NULL::bigint AS versions WHERE false";
  return sql::Join(rows, "\n  UNION ALL\n  ");
}

std::string NotWholeSql(int id) {
  return "NOT EXISTS (SELECT 1 FROM whole WHERE whole.transform_id = " + std::to_string(id) + ")";
}

std::string WholePagesSql(const std::string& schema) {
  return "INSERT INTO " + sql::Qualified(schema, "pages") +
         " (transform_id, buckets, keys, key_count, delta_count, whole)\n"
         "  SELECT transform_id, '{}', '{}', least(versions, 2147483647)::int, 0, true FROM whole\n"
         "  RETURNING id";
}

}  // namespace trellis::staging
