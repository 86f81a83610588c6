// Step 11 -> 12: which attachment of each partition or inheritance child
// capture saw (spec/engine.md "Partitioned and inherited sources").
// Released: never edited again.
#include "catalog/migration_steps.h"

namespace trellis::catalog::steps {

// The identity of the pg_inherits row linking a captured relation to its
// parent, as capture/attachment.h defines it, so the relation sync can tell
// one attachment from the next. Rows captured before this step get the link
// there now; the source's own table (no parent) and a relation no longer
// linked to the parent recorded get NULL, which the sync applies as a change
// (detached, or detached and added again).
//
// This step records without the relation's lock (a migration waits on no
// user table), so it cannot rule out that the 64-bit value it makes names a
// transaction that is running and will attach the relation again. It takes
// the value only when it is below the snapshot's xmin (that transaction has
// ended); otherwise the value 2^32 lower, below every running xid. That
// lower value differs from what the sync computes later, so a link made by
// a transaction not older than the oldest one running at the upgrade is
// corrected once as re-attached: a few rows at most, and never wrong.
const std::string_view kV12Attachments = R"sql(
ALTER TABLE {schema}.source_relations ADD COLUMN attachment bigint;

WITH snapshot AS (
  SELECT pg_catalog.pg_snapshot_xmin(s)::text::bigint AS lo,
         pg_catalog.pg_snapshot_xmax(s)::text::bigint AS hi
  FROM pg_catalog.pg_current_snapshot() s
), links AS (
  SELECT i.inhrelid, i.inhparent,
         x.hi - 1 - ((x.hi - 1 - i.xmin::text::bigint) % 4294967296 + 4294967296) % 4294967296
           AS f,
         x.lo
  FROM pg_catalog.pg_inherits i, snapshot x
  WHERE NOT i.inhdetachpending
)
UPDATE {schema}.source_relations r
SET attachment = CASE WHEN l.f < l.lo THEN l.f ELSE l.f - 4294967296 END
FROM links l
WHERE l.inhrelid = r.relid AND l.inhparent = r.parent_relid;
)sql";

}  // namespace trellis::catalog::steps
