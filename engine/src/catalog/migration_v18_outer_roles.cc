// Step 17 -> 18: RIGHT and FULL joins among a transform's inputs
// (spec/engine.md "Joins of every shape").
// Released: never edited again.
#include "catalog/migration_steps.h"

namespace trellis::catalog::steps {

// transform_inputs.role gains right_join and full_join. The check is
// dropped and made again under the same name, so a catalog at any version
// ends with one check that allows the five roles.
const std::string_view kV18OuterRoles = R"sql(
ALTER TABLE {schema}.transform_inputs
  DROP CONSTRAINT IF EXISTS transform_inputs_role_check,
  ADD CONSTRAINT transform_inputs_role_check
    CHECK (role IN ('from', 'inner_join', 'left_join', 'right_join', 'full_join'));
)sql";

}  // namespace trellis::catalog::steps
