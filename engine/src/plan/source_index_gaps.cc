#include "plan/source_index_gaps.h"

#include "plan/group_plan.h"
#include "plan/join_plan.h"
#include "sql/quote.h"

namespace trellis::plan {

using aggregates::GroupingExpression;

Result<bool> LookupServed(pg::Connection& conn, const std::string& table, const std::string& alias,
                          const std::vector<GroupingExpression>& keys) {
  TRELLIS_RETURN_IF_ERROR(conn.Exec("SET enable_seqscan = off"));
  auto plan = conn.Query(aggregates::GroupLookupProbeSql(table, alias, keys));
  TRELLIS_RETURN_IF_ERROR(conn.Exec("RESET enable_seqscan"));
  if (!plan.ok()) return plan.status();
  return aggregates::ProbeUsesIndex(plan->text(0, 0));
}

Status AddLookupGap(pg::Connection& conn, const catalog::Transform& t, const catalog::Input& input,
                    const std::vector<std::string>& columns, const std::string& role,
                    std::vector<SourceIndexGapStatus>& gaps) {
  const std::string table = sql::Qualified(input.source.schema_name, input.source.table_name);
  std::vector<GroupingExpression> keys;
  for (const auto& c : columns) {
    auto type = conn.Query(
        "SELECT format_type(a.atttypid, a.atttypmod) FROM pg_catalog.pg_attribute a "
        "WHERE a.attrelid = $1::regclass AND a.attname = $2 AND NOT a.attisdropped",
        {table, c});
    if (!type.ok()) return type.status();
    if (type->empty()) return Status::OK();  // renamed or dropped: the transform fails anyway
    keys.push_back({sql::Ident(input.alias) + "." + sql::Ident(c), type->text(0, 0)});
  }
  const std::string shown = input.source.schema_name + "." + input.source.table_name;
  const auto parts = aggregates::IndexParts(input.alias, keys);
  for (const auto& gap : gaps) {
    if (gap.table == shown && gap.columns == parts && gap.role == role) return Status::OK();
  }
  auto served = LookupServed(conn, table, input.alias, keys);
  if (!served.ok()) return served.status();
  if (served.value()) return Status::OK();
  gaps.push_back(SourceIndexGapStatus{shown, parts, role, t.source_index_optional,
                                      aggregates::IndexFixSql(table, input.alias, keys)});
  return Status::OK();
}

Result<std::vector<SourceIndexGapStatus>> JoinPlan::SourceIndexGaps(
    pg::Connection& conn, const catalog::Transform& t) const {
  std::vector<SourceIndexGapStatus> gaps;
  for (const auto& input : t.inputs) {
    if (!input.joined_to) continue;
    for (const auto& to : t.inputs) {
      if (to.ordinal != *input.joined_to) continue;
      TRELLIS_RETURN_IF_ERROR(AddLookupGap(conn, t, to, input.joined_columns, "join_from", gaps));
    }
    TRELLIS_RETURN_IF_ERROR(AddLookupGap(conn, t, input, input.join_columns, "join_joined", gaps));
  }
  return gaps;
}

Result<std::vector<SourceIndexGapStatus>> GroupPlan::SourceIndexGaps(
    pg::Connection& conn, const catalog::Transform& t) const {
  std::vector<SourceIndexGapStatus> gaps;
  std::vector<GroupingExpression> keys;
  for (const auto& k : t.key) {
    if (k.name == kWholeTableKey) return gaps;  // no lookup by group
    keys.push_back({k.expr, k.sql_type});
  }
  const std::string source = sql::Qualified(t.source.schema_name, t.source.table_name);
  auto served = LookupServed(conn, source, t.source_alias, keys);
  if (!served.ok()) return served.status();
  if (served.value()) return gaps;
  gaps.push_back(SourceIndexGapStatus{t.source.schema_name + "." + t.source.table_name,
                                      aggregates::IndexParts(t.source_alias, keys), "group_by",
                                      t.source_index_optional,
                                      aggregates::IndexFixSql(source, t.source_alias, keys)});
  return gaps;
}

}  // namespace trellis::plan
