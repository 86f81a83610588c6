// Step 5 -> 6: corrections of targets for source relations (partitions and
// inheritance children) that appeared under a source or left it. Released:
// never edited again.
#include "catalog/migration_steps.h"

namespace trellis::catalog::steps {

const std::string_view kV6Relations = R"sql(
-- One row per target being corrected because a relation of a source it reads
-- appeared (created, attached, made to inherit) or left (detached, dropped,
-- no longer inheriting). The correction is the ledger pages `page_ids`
-- (the keys the relation's rows reach); it is finished when none of them is
-- left, and the staging worker then deletes the row.
CREATE TABLE {schema}.corrections (
  id            bigserial PRIMARY KEY,
  transform_id  int NOT NULL REFERENCES {schema}.transforms(id) ON DELETE CASCADE,
  node          text NOT NULL,   -- the relation's qualified name, as shown
  change        text NOT NULL CHECK (change IN ('added', 'detached', 'dropped')),
  since         timestamptz NOT NULL DEFAULT now(),
  page_ids      bigint[] NOT NULL,
  keys_total    bigint NOT NULL
);
CREATE INDEX ON {schema}.corrections (transform_id);

-- A relation's name when capture was installed on it, for status once the
-- relation is dropped.
ALTER TABLE {schema}.source_relations ADD COLUMN node text;
)sql";

}  // namespace trellis::catalog::steps
