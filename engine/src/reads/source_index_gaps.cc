#include "reads/source_index_gaps.h"

#include "plan/aggregates/source_index_gap.h"
#include "plan/group_plan.h"
#include "sql/quote.h"

namespace trellis::reads {

Result<std::vector<SourceIndexGapStatus>> ReadSourceIndexGaps(pg::Connection& conn,
                                                              const catalog::Transform& t) {
  std::vector<SourceIndexGapStatus> gaps;
  if (t.kind != "group_by") return gaps;
  std::vector<plan::aggregates::GroupingExpression> keys;
  for (const auto& k : t.key) {
    if (k.name == plan::kWholeTableKey) return gaps;  // no lookup by group
    keys.push_back({k.expr, k.sql_type});
  }
  const std::string source = sql::Qualified(t.source.schema_name, t.source.table_name);
  // The planner decides whether an index serves the lookup, with sequential
  // scans priced out; the setting is the session's only for this probe.
  TRELLIS_RETURN_IF_ERROR(conn.Exec("SET enable_seqscan = off"));
  auto plan = conn.Query(plan::aggregates::GroupLookupProbeSql(source, t.source_alias, keys));
  TRELLIS_RETURN_IF_ERROR(conn.Exec("RESET enable_seqscan"));
  if (!plan.ok()) return plan.status();
  if (plan::aggregates::ProbeUsesIndex(plan->text(0, 0))) return gaps;
  gaps.push_back(SourceIndexGapStatus{t.source.schema_name + "." + t.source.table_name,
                                      plan::aggregates::IndexParts(t.source_alias, keys),
                                      "group_by", t.source_index_optional,
                                      plan::aggregates::IndexFixSql(source, t.source_alias, keys)});
  return gaps;
}

}  // namespace trellis::reads
