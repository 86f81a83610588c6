#include "plan/batch_paths.h"

#include "plan/template.h"
#include "sql/quote.h"

namespace trellis::plan {
namespace {

// reltuples is -1 before the first ANALYZE (PostgreSQL 14 and later) and 0
// after one of an empty table; either way it says nothing of the rows
// there now, and the statistics' live rows (kept as rows are written, no
// ANALYZE needed) or the table's size at 100 bytes a row, whichever says
// more, stand in. The table is not named in the statement (to_regclass): a
// target dropped under the engine must fail in the drain's unit, where the
// executor pauses the transform for it, not here.
constexpr std::string_view kTargetRows = R"sql((SELECT CASE
  WHEN c.reltuples > 0 AND c.relpages > 0
    THEN (c.reltuples / c.relpages *
          (pg_catalog.pg_relation_size(c.oid) / pg_catalog.current_setting('block_size')::bigint))::bigint
  ELSE greatest(pg_catalog.pg_stat_get_live_tuples(c.oid), pg_catalog.pg_relation_size(c.oid) / 100) END
FROM pg_catalog.pg_class c WHERE c.oid = pg_catalog.to_regclass({target_literal})))sql";

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

std::vector<PagesStatement> PagesSql(const TransformPlan& plan, BatchPath path) {
  if (path == BatchPath::kDelta) return plan.ApplyPagesSql();
  return {PagesStatement{plan.RecomputePagesSql(), {}}};
}

Bound RebuildTargetSql(const TransformPlan& plan) { return plan.RebuildWhole(); }

std::string TargetRowsSql(const TransformPlan& plan) {
  return Render(kTargetRows, {{"target_literal", sql::Literal(plan.target())}});
}

}  // namespace trellis::plan
