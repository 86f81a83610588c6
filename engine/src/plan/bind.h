// The binder: catalog rows -> the plan of a transform's kind. The one place
// that decides by a transform's kind: a new kind is a new plan file and one
// case in each switch here (bind.cc), which the compiler asks for.
#pragma once

#include <memory>
#include <string>
#include <string_view>
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
// here, from the statement's shape.
Result<catalog::Transform> BindDefinition(const grammar::TransformStmt& stmt,
                                          const std::vector<capture::ResolvedTable>& inputs);

// `schema` is the catalog schema. One case per kind, with no default.
Result<std::unique_ptr<TransformPlan>> Bind(const catalog::Transform& t, const std::string& schema);

// Whether a transform of `kind` may route source columns through capture
// (capture/routing.h), so that its define may regenerate the capture of a
// source that has it already; asked before the plan is bound, to choose the
// lock define takes on the source.
bool MayRouteColumns(catalog::TransformKind kind);

}  // namespace trellis::plan
