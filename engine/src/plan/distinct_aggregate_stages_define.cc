#include "plan/distinct_aggregate_stages_define.h"

#include "catalog/composite.h"
#include "catalog/parts.h"
#include "catalog/states.h"
#include "grammar/render.h"
#include "plan/aggregate_stages_define.h"
#include "plan/aggregates/group_check.h"
#include "plan/distinct_aggregate_stages.h"
#include "plan/group_define_over_join.h"
#include "plan/grouped_rewrite.h"

namespace trellis::plan {
namespace {

// What the hidden grouping by distinct values reads as in a refusal.
constexpr std::string_view kValuesInUserTerms = "the grouping by DISTINCT values";

}  // namespace

Status DefineDistinctAggregateStages(pg::Connection& conn, const std::string& schema,
                                     const grammar::TransformStmt& stmt, const DefineSteps& steps) {
  const std::string& name = stmt.target.name;
  if (stmt.HasSubqueries()) {
    return Status::Internal("DISTINCT aggregates are compiled after the statement's subqueries");
  }
  // The statement as written, checked by PostgreSQL over its own tables
  // first, so that what it refuses is said in the user's terms; then the
  // types PostgreSQL gives its plain sum and avg calls, which the combined
  // partials are cast back to.
  auto tables = steps.resolve_inputs(stmt);
  if (!tables.ok()) return tables.status();
  const std::string from = StatementFromSql(stmt, tables.value());
  TRELLIS_RETURN_IF_ERROR(aggregates::CheckGroupedQuery(conn, stmt, from));
  CallTypes types;
  for (const auto& call : CallsNeedingTypes(stmt)) {
    auto type = aggregates::AggregateType(conn, name, from, CallText(call));
    if (!type.ok()) return type.status();
    types.emplace(CallText(call), type.value());
  }

  auto hidden = HiddenName(conn, schema, kHiddenDistinctPrefix);
  if (!hidden.ok()) return hidden.status();
  auto compiled = CompileDistinctAggregateStages(stmt, hidden.value(), types);
  if (!compiled.ok()) return compiled.status();

  auto values = DefineHiddenGrouping(conn, schema, compiled->values, steps);
  if (!values.ok()) return InUserTerms(values.status(), hidden.value(), name, kValuesInUserTerms);
  // The statement over the distinct values, always as compiled stages: the
  // user's transform is a projection, whose plan never reads its stored
  // definition (the statement as written, DISTINCT calls and all).
  TRELLIS_RETURN_IF_ERROR(InUserTerms(DefineAggregateStages(conn, schema, compiled->owner, steps),
                                      hidden.value(), name, kValuesInUserTerms));

  auto owner = catalog::LoadTransform(conn, schema, name);
  if (!owner.ok()) return owner.status();
  const int owner_id = owner->id;
  auto whole = catalog::LoadComposite(conn, schema, std::move(owner.value()));
  if (!whole.ok()) return whole.status();
  std::vector<int> stage_ids = values.value();
  for (const auto& stage : whole->stages) stage_ids.push_back(stage.id);
  // The user's transform shows, and dumps, the statement as written.
  TRELLIS_RETURN_IF_ERROR(catalog::RecordDefinition(conn, schema, owner_id, grammar::Render(stmt)));
  return catalog::RecordStages(conn, schema, stage_ids, owner_id);
}

}  // namespace trellis::plan
