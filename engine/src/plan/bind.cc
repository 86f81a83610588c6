#include "plan/bind.h"

#include "plan/fan_out_join_plan.h"
#include "plan/full_join_plan.h"
#include "plan/group_plan.h"
#include "plan/join_plan.h"
#include "plan/projection_plan.h"
#include "sql/quote.h"

namespace trellis::plan {

using catalog::TransformKind;

Result<catalog::Transform> BindDefinition(const grammar::TransformStmt& stmt,
                                          const std::vector<capture::ResolvedTable>& inputs) {
  // A grouped join's one input is its hidden join target
  // (plan/group_define_over_join.h), which GroupPlan groups.
  if (stmt.Groups()) return GroupPlan::Draft(stmt, inputs);
  if (!stmt.joins.empty()) return JoinPlan::Draft(stmt, inputs);
  return ProjectionPlan::Draft(stmt, inputs);
}

Result<std::unique_ptr<TransformPlan>> Bind(const catalog::Transform& t,
                                            const std::string& schema) {
  switch (t.kind) {
    case TransformKind::kProjection:
      return std::unique_ptr<TransformPlan>(std::make_unique<ProjectionPlan>(t, schema));
    case TransformKind::kGroupBy:
      return GroupPlan::Bind(t, schema);
    case TransformKind::kJoin:
      return std::unique_ptr<TransformPlan>(std::make_unique<JoinPlan>(t, schema));
    case TransformKind::kFanOutJoin:
      return std::unique_ptr<TransformPlan>(std::make_unique<FanOutJoinPlan>(t, schema));
    case TransformKind::kFullOuterJoin:
      return std::unique_ptr<TransformPlan>(std::make_unique<FullJoinPlan>(t, schema));
  }
  // Only a value outside the enum reaches here (the catalog loader refuses
  // any name it does not know).
  return Status::Internal("transform " + t.name() + " has a kind this engine cannot run");
}

bool MayRouteColumns(TransformKind kind) {
  switch (kind) {
    case TransformKind::kProjection:
      return false;                // its capture rows carry the source key only
    case TransformKind::kGroupBy:  // the group expressions, and the values of deltas
    case TransformKind::kJoin:     // each joined input's join columns
    case TransformKind::kFanOutJoin:
    case TransformKind::kFullOuterJoin:
      return true;
  }
  return true;
}

}  // namespace trellis::plan
