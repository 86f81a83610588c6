#include "reads/source_index_gaps.h"

#include "plan/aggregates/source_index_gap.h"
#include "plan/group_plan.h"
#include "sql/quote.h"

namespace trellis::reads {
namespace {

using plan::aggregates::GroupingExpression;

// Whether the planner reads `table` (quoted, qualified) through an index
// for a lookup of `keys` over `alias`. Sequential scans are priced out for
// the probe only (the session's setting, reset at once).
Result<bool> Served(pg::Connection& conn, const std::string& table, const std::string& alias,
                    const std::vector<GroupingExpression>& keys) {
  TRELLIS_RETURN_IF_ERROR(conn.Exec("SET enable_seqscan = off"));
  auto plan = conn.Query(plan::aggregates::GroupLookupProbeSql(table, alias, keys));
  TRELLIS_RETURN_IF_ERROR(conn.Exec("RESET enable_seqscan"));
  if (!plan.ok()) return plan.status();
  return plan::aggregates::ProbeUsesIndex(plan->text(0, 0));
}

// Appends the gap of looking `input`'s rows up by `columns`, when open.
Status AddGap(pg::Connection& conn, const catalog::Transform& t, const catalog::Input& input,
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
  const auto parts = plan::aggregates::IndexParts(input.alias, keys);
  for (const auto& gap : gaps) {
    if (gap.table == shown && gap.columns == parts && gap.role == role) return Status::OK();
  }
  auto served = Served(conn, table, input.alias, keys);
  if (!served.ok()) return served.status();
  if (served.value()) return Status::OK();
  gaps.push_back(SourceIndexGapStatus{shown, parts, role, t.source_index_optional,
                                      plan::aggregates::IndexFixSql(table, input.alias, keys)});
  return Status::OK();
}

// A join reads, for each joined input, the rows of the table it joins by
// their join columns (role join_from: the FROM keys a joined row's change
// reaches) and the joined table's row by its own (role join_joined: every
// recompute of a FROM key). The second is a unique key when the transform is
// defined, so it is open only once that index is gone.
Result<std::vector<SourceIndexGapStatus>> JoinGaps(pg::Connection& conn,
                                                   const catalog::Transform& t) {
  std::vector<SourceIndexGapStatus> gaps;
  for (const auto& input : t.inputs) {
    if (!input.joined_to) continue;
    for (const auto& to : t.inputs) {
      if (to.ordinal != *input.joined_to) continue;
      TRELLIS_RETURN_IF_ERROR(AddGap(conn, t, to, input.joined_columns, "join_from", gaps));
    }
    TRELLIS_RETURN_IF_ERROR(AddGap(conn, t, input, input.join_columns, "join_joined", gaps));
  }
  return gaps;
}

}  // namespace

Result<std::vector<SourceIndexGapStatus>> ReadSourceIndexGaps(pg::Connection& conn,
                                                              const catalog::Transform& t) {
  std::vector<SourceIndexGapStatus> gaps;
  if (t.kind == "join") return JoinGaps(conn, t);
  if (t.kind != "group_by") return gaps;
  std::vector<GroupingExpression> keys;
  for (const auto& k : t.key) {
    if (k.name == plan::kWholeTableKey) return gaps;  // no lookup by group
    keys.push_back({k.expr, k.sql_type});
  }
  const std::string source = sql::Qualified(t.source.schema_name, t.source.table_name);
  auto served = Served(conn, source, t.source_alias, keys);
  if (!served.ok()) return served.status();
  if (served.value()) return gaps;
  gaps.push_back(SourceIndexGapStatus{t.source.schema_name + "." + t.source.table_name,
                                      plan::aggregates::IndexParts(t.source_alias, keys),
                                      "group_by", t.source_index_optional,
                                      plan::aggregates::IndexFixSql(source, t.source_alias, keys)});
  return gaps;
}

}  // namespace trellis::reads
