#include "plan/bind.h"

#include "plan/group_plan.h"
#include "plan/join_plan.h"
#include "plan/projection_plan.h"

namespace trellis::plan {

Result<catalog::Transform> BindDefinition(const grammar::TransformStmt& stmt,
                                          const std::vector<capture::ResolvedTable>& inputs) {
  // A grouped join's one input is its hidden join target
  // (statements/define_group_join.h), which GroupPlan groups.
  if (stmt.Groups()) return GroupPlan::Draft(stmt, inputs);
  if (!stmt.joins.empty()) return JoinPlan::Draft(stmt, inputs);
  return ProjectionPlan::Draft(stmt, inputs);
}

Result<std::unique_ptr<TransformPlan>> Bind(const catalog::Transform& t,
                                            const std::string& schema) {
  if (t.kind == "projection") {
    return std::unique_ptr<TransformPlan>(std::make_unique<ProjectionPlan>(t, schema));
  }
  if (t.kind == "group_by") return GroupPlan::Bind(t, schema);
  if (t.kind == "join") {
    return std::unique_ptr<TransformPlan>(std::make_unique<JoinPlan>(t, schema));
  }
  return Status::Internal("transform " + t.name() + " has kind " + t.kind +
                          ", which this engine cannot run");
}

}  // namespace trellis::plan
