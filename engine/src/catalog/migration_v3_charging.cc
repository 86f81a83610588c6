// Step 2 -> 3: what failure charging (issue 13) keeps beyond catalog v2's
// quarantined_rows, held_keys and drain_failures tables: the capture failure
// a transform waits on (kept apart from its pause, so an operator's pause
// keeps its kind while status still shows the disruption), and when a
// column was paused (poisoned_since of a quarantined column).
#include "catalog/migration_steps.h"

namespace trellis::catalog::steps {

const std::string_view kV3Charging = R"sql(
ALTER TABLE {schema}.transforms
  ADD COLUMN capture_failure text,
  ADD COLUMN capture_failed_at timestamptz;
ALTER TABLE {schema}.transform_columns ADD COLUMN paused_at timestamptz;
-- A catalog disrupted before this step: the pause reason says what was
-- found when the disruption was the pause; otherwise only that it was.
UPDATE {schema}.transforms SET
  capture_failure = CASE WHEN paused_kind = 'disruption' THEN paused_reason
    ELSE 'capture of a source was changed outside Trellis, so writes may be missing from the '
         'target; RESUME TRANSFORM ' || quote_ident(target_name) ||
         ' reinstalls capture and rebuilds it' END,
  capture_failed_at = CASE WHEN paused_kind = 'disruption' THEN paused_at END
WHERE capture_disrupted;
ALTER TABLE {schema}.transforms ADD CONSTRAINT transforms_capture_failure_check
  CHECK (capture_disrupted = (capture_failure IS NOT NULL));
UPDATE {schema}.transform_columns SET paused_at = now() WHERE state = 'paused';
)sql";

}  // namespace trellis::catalog::steps
