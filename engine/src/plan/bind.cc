#include "plan/bind.h"

#include "plan/group_plan.h"
#include "plan/projection_plan.h"

namespace trellis::plan {

Result<catalog::Transform> BindDefinition(const grammar::TransformStmt& stmt,
                                          const std::vector<capture::ResolvedTable>& inputs) {
  if (stmt.join) {
    return Status::Unsupported(
        "JOIN transforms are parsed but not executed by this version of Trellis; define a "
        "projection (SELECT ... [WHERE ...]) over one table");
  }
  if (stmt.Groups()) return GroupPlan::Draft(stmt, inputs);
  return ProjectionPlan::Draft(stmt, inputs);
}

Result<std::unique_ptr<TransformPlan>> Bind(const catalog::Transform& t,
                                            const std::string& schema) {
  if (t.kind == "projection") {
    return std::unique_ptr<TransformPlan>(std::make_unique<ProjectionPlan>(t, schema));
  }
  if (t.kind == "group_by") return GroupPlan::Bind(t, schema);
  return Status::Internal("transform " + t.name() + " has kind " + t.kind +
                          ", which this engine cannot run");
}

}  // namespace trellis::plan
