#include "plan/batch_paths.h"

#include "plan/template.h"
#include "sql/quote.h"

namespace trellis::plan {
namespace {

// reltuples is -1 before the first ANALYZE (PostgreSQL 14 and later) and 0
// after one of an empty table; either way it says nothing of the rows
// there now, which are counted, up to the cap.
constexpr std::string_view kTargetRows = R"sql((SELECT CASE
  WHEN c.reltuples > 0 AND c.relpages > 0
    THEN (c.reltuples / c.relpages *
          (pg_catalog.pg_relation_size(c.oid) / pg_catalog.current_setting('block_size')::bigint))::bigint
  ELSE (SELECT count(*) FROM (SELECT 1 FROM {target} LIMIT {cap}) AS __trellis_n) END
FROM pg_catalog.pg_class c WHERE c.oid = {target_literal}::regclass))sql";

}  // namespace

std::string_view BatchPathName(BatchPath path) {
  switch (path) {
    case BatchPath::kDelta:
      return "delta";
    case BatchPath::kRecompute:
      return "recompute";
    case BatchPath::kRebuild:
      return "rebuild";
  }
  return "recompute";
}

std::optional<BatchPath> BatchPathFromName(std::string_view name) {
  for (BatchPath p : {BatchPath::kDelta, BatchPath::kRecompute, BatchPath::kRebuild}) {
    if (BatchPathName(p) == name) return p;
  }
  return std::nullopt;
}

bool OffersDeltas(const TransformPlan& plan) { return !plan.DeltaRowsSql().empty(); }

std::vector<std::string> PagesSql(const TransformPlan& plan, BatchPath path) {
  if (path == BatchPath::kDelta) return plan.ApplyPagesSql();
  return {plan.RecomputePagesSql()};
}

Bound RebuildTargetSql(const TransformPlan& plan) {
  return plan.RecomputeRange(KeyRange{}, std::nullopt);
}

std::string TargetRowsSql(const TransformPlan& plan, const std::string& cap) {
  return Render(
      kTargetRows,
      {{"target", plan.target()}, {"target_literal", sql::Literal(plan.target())}, {"cap", cap}});
}

}  // namespace trellis::plan
