// Step 14 -> 15: a transform's stages, recorded. Released: never edited again.
#include "catalog/migration_steps.h"

namespace trellis::catalog::steps {

// A statement the user wrote as one TRANSFORM may be maintained as several
// catalog transforms, its stages (spec/engine.md "Stages"): `owner_id` is
// the id of the transform the user knows (NULL on that one), and
// `stage_order` a stage's place among its owner's, counted from the sources
// (1 reads only sources; the owner has the highest). Until this step the
// only stage, a grouped join's hidden join, was recognised by its target
// being in the catalog schema; the UPDATE records what that pattern said:
// the part is the FROM input of exactly one group, its owner. There is no
// foreign key: a dump inserts transforms in id order, and a stage is
// defined, so numbered, before its owner.
const std::string_view kV15Stages = R"sql(
ALTER TABLE {schema}.transforms
  ADD COLUMN owner_id int,
  ADD COLUMN stage_order int NOT NULL DEFAULT 1;
UPDATE {schema}.transforms part SET owner_id = g.id, stage_order = 1
FROM {schema}.transforms g
JOIN {schema}.transform_inputs i ON i.transform_id = g.id AND i.ordinal = 1
JOIN {schema}.sources s ON s.id = i.source_id
WHERE s.schema_name = part.target_schema AND s.table_name = part.target_name
  AND part.target_schema = (SELECT n.nspname FROM pg_catalog.pg_class c
                            JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
                            WHERE c.oid = part.tableoid);
UPDATE {schema}.transforms g SET stage_order = 2
WHERE EXISTS (SELECT 1 FROM {schema}.transforms part WHERE part.owner_id = g.id);
)sql";

}  // namespace trellis::catalog::steps
