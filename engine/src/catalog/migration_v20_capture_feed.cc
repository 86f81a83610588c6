// Step 19 -> 20: what a capture feed persists (spec/engine.md "Capture
// feeds"). Released: never edited again.
#include "catalog/migration_steps.h"

namespace trellis::catalog::steps {

// capture_feed: one row, the catalog's capture mode and, in logical mode,
// the replication slot and publication it reads and how far staging has
// taken the slot. Every column of the position is written by the staging
// transaction that staged up to it, so it commits with the pages it made:
//   staged_lsn       every transaction whose commit record ends at or before
//                    it is staged (NULL: none read yet)
//   awaiting_mark    the capture_marks row the feed skips up to: changes of
//                    transactions up to the one that wrote it were captured
//                    by triggers (a switch to logical mode); NULL once seen
//   staged_snapshot  a snapshot every one of whose visible writers is
//                    staged: its xmin bounds the xid of any writer not
//                    staged yet; pending_snapshot/pending_lsn the next one,
//                    taken when the insert LSN was pending_lsn, promoted
//                    once staged_lsn reaches it
//   staged_at        when the position was last written
// capture_marks: published with the sources; a row inserted in the
// transaction that switched modes marks the cut in the slot's stream.
const std::string_view kV20CaptureFeed = R"sql(
CREATE TABLE IF NOT EXISTS {schema}.capture_feed (
  singleton        boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  mode             text NOT NULL DEFAULT 'triggers' CHECK (mode IN ('triggers', 'logical')),
  slot_name        text,
  publication_name text,
  awaiting_mark    bigint,
  staged_lsn       pg_lsn,
  staged_snapshot  pg_snapshot,
  pending_snapshot pg_snapshot,
  pending_lsn      pg_lsn,
  staged_at        timestamptz
);
INSERT INTO {schema}.capture_feed DEFAULT VALUES ON CONFLICT DO NOTHING;
CREATE TABLE IF NOT EXISTS {schema}.capture_marks (
  id      bigserial PRIMARY KEY,
  made_at timestamptz NOT NULL DEFAULT now()
);
)sql";

}  // namespace trellis::catalog::steps
