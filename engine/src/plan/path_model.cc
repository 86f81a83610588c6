#include "plan/path_model.h"

#include <spdlog/fmt/fmt.h>

#include "plan/batch_paths.h"
#include "sql/quote.h"

namespace trellis::plan {

std::string InputRowsSql(const catalog::Transform& t) {
  std::vector<std::string> inputs;
  for (const auto& input : t.inputs) {
    inputs.push_back(
        "pg_catalog.to_regclass(" +
        sql::Literal(sql::Qualified(input.source.schema_name, input.source.table_name)) + ")");
  }
  return "(SELECT coalesce(sum(greatest(c.reltuples, pg_catalog.pg_stat_get_live_tuples(c.oid))), "
         "0)::bigint FROM pg_catalog.pg_class c WHERE c.oid = ANY (ARRAY[" +
         sql::Join(inputs, ", ") + "]::regclass[]))";
}

std::string RebuildEstimateUsSql(const TransformPlan& plan, const catalog::Transform& t,
                                 const std::string& schema) {
  const std::string tid = std::to_string(t.id);
  // The factor as the chooser reads it: its distance from 1 halves per
  // kFactorHalfLifeSeconds since the path's last batch.
  const std::string factor = sql::WithSchema(
      fmt::format("coalesce((SELECT 1 + (p.factor - 1) * pg_catalog.power(2, -extract(epoch FROM "
                  "clock_timestamp() - p.last_at) / {}) FROM {{schema}}.batch_paths p WHERE "
                  "p.transform_id = {} AND p.path = 'rebuild' AND p.batches > 0), 1)",
                  kFactorHalfLifeSeconds, tid),
      schema);
  const std::string failed = sql::WithSchema(
      fmt::format("EXISTS (SELECT 1 FROM {{schema}}.batch_paths p WHERE p.transform_id = {} AND "
                  "p.path = 'rebuild' AND p.failed_at > now() - make_interval(secs => {}))",
                  tid, kRebuildFailureBackoffSeconds),
      schema);
  return fmt::format("CASE WHEN {} THEN NULL ELSE ({} + {} * coalesce({}, 0) + {} * {}) * {} END",
                     failed, kBatchOverheadUs, kRebuildUsPerTargetRow, TargetRowsSql(plan),
                     kRebuildUsPerInputRow, InputRowsSql(t), factor);
}

}  // namespace trellis::plan
