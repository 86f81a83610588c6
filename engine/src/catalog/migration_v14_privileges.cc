// Step 13 -> 14: who may read each target, and whether its define accepted
// sources with row-level security. Released: never edited again.
#include "catalog/migration_steps.h"

namespace trellis::catalog::steps {

// `readers` are the roles a TRANSFORM's GRANT SELECT TO named, in the order
// written: define grants them SELECT on the target, and a dump carries
// them (pg_dump's --no-acl, which `mix ecto.dump` passes, drops the grant
// itself). `without_row_security` is the define's WITHOUT ROW SECURITY:
// the status read and the staging worker report row-level security on a
// source only for a transform that did not accept it (spec/engine.md
// "Target privileges", "Row-level security").
const std::string_view kV14Privileges = R"sql(
ALTER TABLE {schema}.transforms
  ADD COLUMN readers text[] NOT NULL DEFAULT '{}',
  ADD COLUMN without_row_security boolean NOT NULL DEFAULT false;
)sql";

}  // namespace trellis::catalog::steps
