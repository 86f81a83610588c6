#include "plan/define_statement.h"

#include "grammar/render.h"
#include "plan/aggregate_stages_define.h"
#include "plan/aggregates/rules.h"
#include "plan/derived_stages_define.h"
#include "plan/distinct_aggregate_stages_define.h"
#include "plan/group_define_over_join.h"
#include "plan/subquery_stages_define.h"
#include "plan/union_all_stages_define.h"

namespace trellis::plan {

Status RefuseReservedTarget(const std::string& schema, const grammar::QualifiedName& target) {
  const std::string reserved(aggregates::kHiddenPrefix);
  if (target.name.rfind(reserved, 0) == 0) {
    return Status::Validation("the transform name " + grammar::RenderName(target.name) +
                              " starts with " + reserved +
                              ", which Trellis keeps for its own transforms; choose another name");
  }
  if (target.schema && *target.schema == schema) {
    return Status::Validation("schema " + grammar::RenderName(schema) +
                              " is Trellis's catalog schema, where no target of yours may go; "
                              "put the target in another schema");
  }
  return Status::OK();
}

Status DefineStatement(pg::Connection& conn, const std::string& schema,
                       const grammar::TransformStmt& stmt, const DefineSteps& steps) {
  TRELLIS_RETURN_IF_ERROR(RefuseReservedTarget(schema, stmt.target));
  return DefineCompiled(conn, schema, stmt, steps);
}

Status DefineCompiled(pg::Connection& conn, const std::string& schema,
                      const grammar::TransformStmt& stmt, const DefineSteps& steps) {
  // Queries in FROM and WITH first: each is a statement of its own, and the
  // statement over their targets comes back through here.
  if (stmt.HasDerived()) return DefineDerivedStages(conn, schema, stmt, steps);
  // UNION ALL first: each branch is a projection or join of its own.
  if (stmt.HasUnionAll()) return DefineUnionAllStages(conn, schema, stmt, steps);
  // Subqueries first: the statement over their targets is defined through
  // here again, and compiles its DISTINCT aggregates or HAVING then.
  if (stmt.HasSubqueries()) return DefineSubqueryStages(conn, schema, stmt, steps);
  if (stmt.HasDistinctAggregates()) {
    return DefineDistinctAggregateStages(conn, schema, stmt, steps);
  }
  if (stmt.CompilesToStages()) return DefineAggregateStages(conn, schema, stmt, steps);
  if (stmt.Groups() && !stmt.joins.empty()) {
    return DefineGroupOverJoin(conn, schema, stmt, steps);
  }
  auto inputs = steps.resolve_inputs(stmt);
  if (!inputs.ok()) return inputs.status();
  auto id = steps.define_one(stmt, inputs.value());
  return id.ok() ? Status::OK() : id.status();
}

}  // namespace trellis::plan
