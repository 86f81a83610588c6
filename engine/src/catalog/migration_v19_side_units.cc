// Step 18 -> 19: a fan-out join's side units (spec/engine.md "Side units").
// Released: never edited again.
#include "catalog/migration_steps.h"

namespace trellis::catalog::steps {

// transforms.side_units: the transform's units are (root key, key of its
// one repeating input), written by define. A transform defined before this
// step keeps the units its pages, held keys and quarantine records were
// written in (root keys), so nothing in flight changes meaning.
const std::string_view kV19SideUnits = R"sql(
ALTER TABLE {schema}.transforms ADD COLUMN IF NOT EXISTS side_units boolean NOT NULL DEFAULT false;
)sql";

}  // namespace trellis::catalog::steps
