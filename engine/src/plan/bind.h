// The binder: catalog rows -> the plan of a transform's kind. The one place
// that looks at a transform's kind; a new kind is a new plan file and one
// line here.
#pragma once

#include <memory>
#include <string>

#include "catalog/model.h"
#include "plan/transform_plan.h"
#include "trellis/status.h"

namespace trellis::plan {

// `schema` is the catalog schema. Fails (internal) for a kind this engine
// does not run, which define never stores.
Result<std::unique_ptr<TransformPlan>> Bind(const catalog::Transform& t, const std::string& schema);

}  // namespace trellis::plan
