#include "plan/aggregate_stages_define.h"

#include <variant>

#include "catalog/composite.h"
#include "catalog/parts.h"
#include "catalog/states.h"
#include "grammar/parser.h"
#include "grammar/render.h"
#include "plan/aggregate_stages.h"
#include "plan/aggregates/group_check.h"
#include "plan/group_define_over_join.h"
#include "sql/quote.h"

namespace trellis::plan {
namespace {

// What the hidden grouping's target reads as in a refusal.
constexpr std::string_view kGroupingInUserTerms = "the grouping";

}  // namespace

std::string StatementFromSql(const grammar::TransformStmt& stmt,
                             const std::vector<capture::ResolvedTable>& inputs) {
  auto table = [&](const capture::ResolvedTable& t, const grammar::TableRef& ref) {
    return sql::Qualified(t.schema_name, t.table_name) + " AS " + sql::Ident(ref.Qualifier());
  };
  std::string from = table(inputs.front(), stmt.source);
  for (size_t i = 0; i < stmt.joins.size(); ++i) {
    const grammar::JoinClause& join = stmt.joins[i];
    std::vector<std::string> on;
    for (const auto& [to_column, column] : join.on) {
      on.push_back(sql::Ident(join.to) + "." + sql::Ident(to_column) + " = " +
                   sql::Ident(join.table.Qualifier()) + "." + sql::Ident(column));
    }
    from += grammar::JoinKeyword(join.kind) + table(inputs[i + 1], join.table) + " ON " +
            sql::Join(on, " AND ");
  }
  return from;
}

Result<std::vector<int>> DefineHiddenGrouping(pg::Connection& conn, const std::string& schema,
                                              const grammar::TransformStmt& group,
                                              const DefineSteps& steps) {
  if (group.joins.empty()) {
    auto inputs = steps.resolve_inputs(group);
    if (!inputs.ok()) return inputs.status();
    auto id = steps.define_one(group, inputs.value());
    if (!id.ok()) return id.status();
    return std::vector<int>{id.value()};
  }
  TRELLIS_RETURN_IF_ERROR(DefineGroupOverJoin(conn, schema, group, steps));
  auto t = catalog::LoadTransform(conn, schema, group.target.name);
  if (!t.ok()) return t.status();
  auto whole = catalog::LoadComposite(conn, schema, std::move(t.value()));
  if (!whole.ok()) return whole.status();
  std::vector<int> ids;
  for (const auto& stage : whole->stages) ids.push_back(stage.id);
  ids.push_back(whole->owner.id);
  return ids;
}

Status DefineAggregateStages(pg::Connection& conn, const std::string& schema,
                             const grammar::TransformStmt& stmt, const DefineSteps& steps) {
  const std::string& name = stmt.target.name;
  // The statement as written, checked by PostgreSQL over its own tables
  // first, so that what it refuses (a column neither grouped nor
  // aggregated, a HAVING that is no condition) is said in the user's terms.
  auto tables = steps.resolve_inputs(stmt);
  if (!tables.ok()) return tables.status();
  TRELLIS_RETURN_IF_ERROR(
      aggregates::CheckGroupedQuery(conn, stmt, StatementFromSql(stmt, *tables)));

  auto hidden = HiddenName(conn, schema, kHiddenGroupPrefix);
  if (!hidden.ok()) return hidden.status();
  auto stages = CompileAggregateStages(stmt, hidden.value());
  if (!stages.ok()) return stages.status();

  auto grouping = DefineHiddenGrouping(conn, schema, stages->group, steps);
  if (!grouping.ok()) {
    return InUserTerms(grouping.status(), hidden.value(), name, kGroupingInUserTerms);
  }
  auto target = steps.resolve_input(hidden.value(), "source table");
  if (!target.ok()) return target.status();
  auto owner = steps.define_one(stages->owner, {target.value()});
  if (!owner.ok()) return InUserTerms(owner.status(), hidden.value(), name, kGroupingInUserTerms);
  // The user's transform shows, and dumps, the statement as written.
  TRELLIS_RETURN_IF_ERROR(
      catalog::RecordDefinition(conn, schema, owner.value(), grammar::Render(stmt)));
  return catalog::RecordStages(conn, schema, grouping.value(), owner.value());
}

Status RefuseAlterOfStages(const std::string& name, const std::string& definition) {
  auto parsed = grammar::Parse(definition);
  const auto* statement = std::get_if<grammar::Statement>(&parsed);
  const auto* stmt = statement ? std::get_if<grammar::TransformStmt>(statement) : nullptr;
  if (!stmt || (!stmt->CompilesToStages() && !stmt->HasSubqueries() &&
                !stmt->HasDistinctAggregates() && !stmt->HasUnionAll() && !stmt->HasDerived())) {
    return Status::OK();
  }
  if (!stmt->having_query.empty()) {
    // Read as its grouping in FROM and a WHERE over it (the parser's
    // having_query), so HasDerived() holds too: the refusal names what the
    // user wrote, never the query in FROM the engine made of it.
    return Status::Unsupported(
        "ALTER TRANSFORM cannot change transform " + grammar::RenderName(name) +
        ": a statement with a subquery in HAVING runs as stages compiled from its grouping and "
        "the subquery, which ALTER does not recompile; DROP TRANSFORM " +
        grammar::RenderName(name) +
        " and define it again with the columns you want (or define the grouping as a "
        "transform of its own, which ALTER can change, and compare its target to the "
        "subquery in a second transform's WHERE)");
  }
  const std::string from = stmt->HasDerived()      ? "its queries in FROM or WITH"
                           : stmt->HasUnionAll()   ? "its UNION ALL"
                           : stmt->HasSubqueries() ? "its subqueries in WHERE"
                           : stmt->HasDistinctAggregates()
                               ? "its DISTINCT aggregates"
                               : "its HAVING or its expressions over aggregates";
  return Status::Unsupported("ALTER TRANSFORM cannot change transform " +
                             grammar::RenderName(name) + ": it runs as stages compiled from " +
                             from +
                             ", which ALTER does not recompile; DROP TRANSFORM it and define it "
                             "again as you want it");
}

}  // namespace trellis::plan
