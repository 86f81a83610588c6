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
  // The factors as the chooser reads them: each one's distance from 1
  // halves per kFactorHalfLifeSeconds since the path's last batch.
  const auto aged = [&](const std::string& column, const std::string& measured) {
    return sql::WithSchema(
        fmt::format("coalesce((SELECT 1 + (p.{0} - 1) * pg_catalog.power(2, -extract(epoch FROM "
                    "clock_timestamp() - p.last_at) / {1}) FROM {{schema}}.batch_paths p WHERE "
                    "p.transform_id = {2} AND p.path = 'rebuild' AND {3}), 1)",
                    column, kFactorHalfLifeSeconds, tid, measured),
        schema);
  };
  const std::string growing = aged("factor", "p.batches - p.fixed_batches > 0");
  const std::string fixed = aged("fixed_factor", "p.fixed_batches > 0");
  const std::string failed = sql::WithSchema(
      fmt::format("EXISTS (SELECT 1 FROM {{schema}}.batch_paths p WHERE p.transform_id = {} AND "
                  "p.path = 'rebuild' AND p.failed_at > now() - make_interval(secs => {}))",
                  tid, kRebuildFailureBackoffSeconds),
      schema);
  return fmt::format(
      "CASE WHEN {} THEN NULL ELSE {} * {} + ({} * coalesce({}, 0) + {} * {}) * {} END", failed,
      kBatchOverheadUs, fixed, kRebuildUsPerTargetRow, TargetRowsSql(plan), kRebuildUsPerInputRow,
      InputRowsSql(t), growing);
}

}  // namespace trellis::plan
