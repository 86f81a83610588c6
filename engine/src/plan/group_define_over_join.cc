#include "plan/group_define_over_join.h"

#include <algorithm>

#include "catalog/parts.h"
#include "grammar/recomputed_aggregate.h"
#include "grammar/render.h"
#include "plan/aggregates/group_check.h"
#include "plan/aggregates/group_sql.h"
#include "plan/aggregates/rules.h"
#include "plan/aggregates/source_index_gap.h"
#include "plan/bind.h"
#include "plan/expression_check.h"
#include "plan/group_over_join.h"
#include "plan/group_plan.h"
#include "sql/quote.h"

namespace trellis::plan {
namespace {

void ReplaceAll(std::string& text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
}

// Every group recompute looks its rows up in the hidden target by the group
// expressions: the index that serves it, made with the target (which is
// Trellis's own, so no user is asked to). When the group's one recomputed
// column is a min or max of a column, the index goes on with that column,
// so its recompute reads one entry per group rather than the group's rows
// (bench/README.md, "Extremes by index"); the group's lookups are served
// all the same by the leading columns.
Status IndexGroups(pg::Connection& conn, const std::string& schema, int group_id) {
  auto group = catalog::LoadTransformById(conn, schema, group_id);
  if (!group.ok()) return group.status();
  const std::string source = sql::Qualified(group->source.schema_name, group->source.table_name);
  auto plan = Bind(group.value(), schema);
  if (!plan.ok()) return plan.status();
  if (const auto* grouped = dynamic_cast<const GroupPlan*>(plan->get())) {
    const std::vector<std::string> columns = aggregates::LoneExtremeIndexColumns(grouped->shape());
    if (!columns.empty()) {
      std::vector<std::string> quoted;
      for (const auto& c : columns) quoted.push_back(sql::Ident(c));
      return conn.Exec("CREATE INDEX ON " + source + " (" + sql::Join(quoted, ", ") + ")");
    }
  }
  std::vector<aggregates::GroupingExpression> keys;
  for (const auto& k : group->key) {
    if (k.name == kWholeTableKey) return Status::OK();  // no lookup by group
    keys.push_back({k.expr, k.sql_type});
  }
  // The fix status would show, less CONCURRENTLY: the table is new, in this
  // transaction, and no one else can see it yet.
  std::string index = aggregates::IndexFixSql(source, group->source_alias, keys);
  ReplaceAll(index, "CREATE INDEX CONCURRENTLY ", "CREATE INDEX ");
  return conn.Exec(index);
}

}  // namespace

Status WithMessage(const Status& status, std::string message) {
  Status out;
  switch (status.code()) {
    case Code::kValidation:
      out = Status::Validation(std::move(message));
      break;
    case Code::kNotFound:
      out = Status::NotFound(std::move(message));
      break;
    case Code::kAlreadyExists:
      out = Status::AlreadyExists(std::move(message));
      break;
    case Code::kUnsupported:
      out = Status::Unsupported(std::move(message));
      break;
    default:
      return status;
  }
  out.sqlstate = status.sqlstate;
  out.detail = status.detail;
  out.hint = status.hint;
  return out;
}

Result<grammar::QualifiedName> HiddenName(pg::Connection& conn, const std::string& schema,
                                          std::string_view prefix) {
  auto n = conn.Query("SELECT pg_catalog.nextval(pg_catalog.pg_get_serial_sequence($1, 'id'))",
                      {sql::Qualified(schema, "transforms")});
  if (!n.ok()) return n.status();
  return grammar::QualifiedName{schema, std::string(prefix) + n->text(0, 0)};
}

Status DefineGroupOverJoin(pg::Connection& conn, const std::string& schema,
                           const grammar::TransformStmt& stmt, const DefineSteps& steps) {
  const std::string& name = stmt.target.name;
  auto hidden = HiddenName(conn, schema, kHiddenJoinPrefix);
  if (!hidden.ok()) return hidden.status();

  // The join first: its define locks every table it reads before any
  // catalog lock, and refuses what a join refuses (a joined side that is not
  // unique, a WHERE that does not evaluate).
  const grammar::TransformStmt join = HiddenJoinStatement(stmt, hidden.value());
  auto inputs = steps.resolve_inputs(join);
  if (!inputs.ok()) return inputs.status();
  auto join_id = steps.define_one(join, inputs.value());
  if (!join_id.ok()) return InUserTerms(join_id.status(), hidden.value(), name);
  TRELLIS_RETURN_IF_ERROR(CheckGroupingOverJoin(conn, schema, join_id.value(), stmt));

  // Then the grouping, over the join's target.
  auto target = steps.resolve_input(hidden.value(), "source table");
  if (!target.ok()) return target.status();
  auto group_id = steps.define_one(stmt, {target.value()});
  if (!group_id.ok()) return GroupingRefusal(group_id.status(), hidden.value(), name);
  // The join is the group's first stage, recorded as such in the catalog.
  TRELLIS_RETURN_IF_ERROR(catalog::RecordStages(conn, schema, {join_id.value()}, group_id.value()));
  return IndexGroups(conn, schema, group_id.value());
}

Status GroupingRefusal(const Status& status, const grammar::QualifiedName& hidden,
                       const std::string& user_name) {
  Status refused = InUserTerms(status, hidden, user_name);
  if (refused.code() != Code::kValidation) return refused;
  // The checks over the join passed: what fails over the hidden target is
  // a column the rewrite could not see, one not written table.column.
  return WithMessage(refused, refused.message() +
                                  " (in a GROUP BY over a JOIN, write every column as "
                                  "table.column, or alias.column, of a table of the statement)");
}

Status InUserTerms(const Status& status, const grammar::QualifiedName& hidden,
                   const std::string& user_name, std::string_view reads_as) {
  if (status.ok()) return status;
  std::string message = status.message();
  ReplaceAll(message, sql::Qualified(*hidden.schema, hidden.name), std::string(reads_as));
  ReplaceAll(message, grammar::RenderQualified(hidden), std::string(reads_as));
  ReplaceAll(message, sql::Ident(hidden.name), sql::Ident(user_name));
  ReplaceAll(message, hidden.name, user_name);
  return WithMessage(status, std::move(message));
}

Status CheckGroupingOverJoin(pg::Connection& conn, const std::string& schema, int join_id,
                             const grammar::TransformStmt& stmt) {
  auto join = catalog::LoadTransformById(conn, schema, join_id);
  if (!join.ok()) return join.status();
  auto plan = Bind(join.value(), schema);
  if (!plan.ok()) return plan.status();
  const std::string from = plan.value()->FromClause();
  grammar::TransformStmt grouping = stmt;
  grouping.where.reset();  // checked with the join
  TRELLIS_RETURN_IF_ERROR(aggregates::CheckGroupedQuery(conn, grouping, from));
  std::vector<std::string> arguments;
  for (const auto& item : stmt.select) {
    if (!item.aggregate) continue;
    for (auto& e : grammar::RowExpressions(*item.aggregate)) arguments.push_back(std::move(e));
  }
  std::vector<std::string_view> per_row;
  for (const auto& item : stmt.select) {
    if (!item.aggregate) per_row.push_back(item.expr);
  }
  for (const auto& a : arguments) per_row.push_back(a);
  for (const auto& g : stmt.group_by) per_row.push_back(g);
  auto checked = ExpressionCheckFor(conn, stmt.target.name)(from, per_row, std::nullopt);
  return checked.ok() ? Status::OK() : checked.status();
}

Status IndexHiddenInputs(pg::Connection& conn, const std::string& schema,
                         const std::vector<int>& ids) {
  const std::string hidden_schema = schema + ".";
  for (int id : ids) {
    auto t = catalog::LoadTransformById(conn, schema, id);
    if (!t.ok()) return t.status();
    auto plan = Bind(t.value(), schema);
    if (!plan.ok()) return plan.status();
    auto gaps = plan.value()->SourceIndexGaps(conn, t.value());
    if (!gaps.ok()) return gaps.status();
    for (const auto& gap : gaps.value()) {
      if (gap.table.rfind(hidden_schema, 0) != 0) continue;  // the user's table: theirs
      std::string fix = gap.fix;
      const std::string concurrently = "CREATE INDEX CONCURRENTLY ";
      if (fix.rfind(concurrently, 0) == 0) fix = "CREATE INDEX " + fix.substr(concurrently.size());
      TRELLIS_RETURN_IF_ERROR(conn.Exec(fix));
    }
  }
  return Status::OK();
}

}  // namespace trellis::plan
