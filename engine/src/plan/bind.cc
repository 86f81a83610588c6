#include "plan/bind.h"

#include "plan/projection_plan.h"

namespace trellis::plan {

Result<std::unique_ptr<TransformPlan>> Bind(const catalog::Transform& t,
                                            const std::string& schema) {
  if (t.kind == "projection") {
    return std::unique_ptr<TransformPlan>(std::make_unique<ProjectionPlan>(t, schema));
  }
  return Status::Internal("transform " + t.name() + " has kind " + t.kind +
                          ", which this engine cannot run");
}

}  // namespace trellis::plan
