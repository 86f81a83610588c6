// The binder: catalog rows -> the plan of a transform's kind. The one place
// that looks at a transform's kind; a new kind is a new plan file and one
// line here.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "capture/sources.h"
#include "catalog/model.h"
#include "grammar/ast.h"
#include "plan/transform_plan.h"
#include "trellis/status.h"

namespace trellis::plan {

// Define time: the draft catalog rows of a TRANSFORM statement, bound to
// its inputs (`inputs`: the FROM table, then each joined table, resolved),
// with the refusals that need nothing but the statement and the inputs'
// keys (a kind this engine does not run, a target key it cannot make).
// Nothing is stored: ids are 0, the target's schema, the sources' ids and
// column types are filled by define once it knows them. The kind is decided
// here, one case per kind, like Bind().
Result<catalog::Transform> BindDefinition(const grammar::TransformStmt& stmt,
                                          const std::vector<capture::ResolvedTable>& inputs);

// `schema` is the catalog schema. Fails (internal) for a kind this engine
// does not run, which define never stores.
Result<std::unique_ptr<TransformPlan>> Bind(const catalog::Transform& t, const std::string& schema);

}  // namespace trellis::plan
