// The relations under a source: a partitioned table's partitions (at any
// depth) and an inheritance parent's children. A write that names one of
// them fires that relation's own statement triggers, not the source's, so
// each carries the source's capture triggers too (capture/sources.h
// AddRelation), and the set is kept equal to what PostgreSQL has:
// partitions created or attached later, children made to inherit later, and
// relations detached, dropped or no longer inheriting, and relations whose
// link changed (capture/attachment.h). Finding the
// differences is here; acting on them (capture plus the correction of the
// targets) is staging/relation_sync.h, which needs the plans.
#pragma once

#include <string>
#include <vector>

#include "catalog/model.h"
#include "pg/connection.h"
#include "trellis/status.h"

namespace trellis::capture {

enum class RelationChange {
  kAdded,     // under the source now, not captured yet
  kDetached,  // captured, exists, no longer under the source
  kDropped,   // captured, gone
  // captured and under the source, but by another link than the one capture
  // saw (detached and attached again, NO INHERIT then INHERIT, or moved to
  // another parent): applied as detached, then added
  kRelinked,
  // a partition whose detach capture saw pending (DETACH ... CONCURRENTLY,
  // pending_detaches) and which is final now: no longer linked pending to
  // any parent. Nothing of capture changes (it was forgotten when seen
  // pending); the targets that take deltas from the source are rebuilt.
  kDetachFinished,
};

// The name of a change in logs and the catalog's `corrections`: "added",
// "detached", "dropped"; "re-attached" (logs only: its corrections are
// those of its two halves); "detach finished" (logs only: it rebuilds).
std::string_view ChangeName(RelationChange change);

struct RelationEvent {
  int source_id = 0;
  std::string relid;
  std::string parent_relid;  // kAdded, kRelinked: its parent now (the source or a partition)
  std::string node;          // quoted qualified name, as status shows it
  RelationChange change = RelationChange::kAdded;
  // kDetached only: capture never recorded the link that came and went (the
  // relation was attached and detached again, or is being detached
  // CONCURRENTLY, between two rounds of the sync). Writes through the parent
  // meanwhile were recomputed with its rows in view, and writes naming it
  // directly since are not captured, so targets keyed by the source are
  // corrected by their anti-join too.
  bool unseen = false;
};

// Every difference between the relations PostgreSQL has under the captured
// sources and those capture covers, sources in id order. A relation that
// already belongs to another source (a child inheriting from two sources) is
// left out: it is reported once, by define's refusal, never captured twice.
// The relations under the sources transform $1::int reads that changed and
// are not applied yet (one column: the relation's name, "schema.table"),
// the same changes FindRelationChanges finds.
std::string PendingRelationsOfTransformSql(const std::string& schema);

Result<std::vector<RelationEvent>> FindRelationChanges(pg::Connection& conn,
                                                       const std::string& schema);

// SELECT true when some relation is not yet in step (as FindRelationChanges
// would report it): convergence waits while it is, since writes naming a
// relation not captured yet are not in the capture buffer.
std::string RelationsOutOfStepSql(const std::string& schema);

// A boolean SQL expression over a capture row `row` (an alias with
// columns source_id and relid): true when the relation the row's statement
// wrote is the source's table, or is reached from it through relations
// capture covers (source_relations), each linked now in pg_inherits by the
// very link capture recorded (its parent and attachment; a partition being
// detached CONCURRENTLY counting as gone). Staging takes only such rows as
// deltas; the others (a relation detached, or detached and attached again,
// that the relation sync has not applied yet, or a row from before catalog
// step 10, relid NULL) are recomputed. spec/engine.md "Deltas" has why that
// is exact.
std::string CapturedUnderSourceSql(const std::string& schema, const std::string& row);

// Captures every relation under the source's table now (define, when the
// source is registered). validation, naming it, when one of them is already
// captured for another source (multiple inheritance).
// REQUIRES: inside a transaction, the source's table locked (LOCK TABLE
// recurses to the relations under it).
Status CaptureRelationsUnder(pg::Connection& conn, const std::string& schema,
                             const catalog::Source& source, const std::string& table_relid);

// Stops capturing `relid` for `source_id`: removes its triggers when the
// relation still exists, forgets it, and watches it (NoteLeftRelation).
// REQUIRES: inside a transaction.
Status ForgetRelation(pg::Connection& conn, const std::string& schema, int source_id,
                      const std::string& relid);

// Records the signature of `relid`'s catalog rows now in `left_relations`
// (catalog step 24), so that a link to the source that comes and goes
// before the sync's next round is found by the change it leaves there;
// drops the record when the relation is gone. REQUIRES: the relation locked
// (its link cannot change until the transaction ends).
Status NoteLeftRelation(pg::Connection& conn, const std::string& schema, int source_id,
                        const std::string& relid);

// Whether `relid` is linked to a parent by a link being detached
// CONCURRENTLY (between the detach's two transactions, or left so by an
// interrupted one). REQUIRES: the relation locked, when the answer must
// hold until the transaction ends (a lock that conflicts with the detach's
// second transaction, such as the relation sync's).
Result<bool> DetachPending(pg::Connection& conn, const std::string& relid);

// Records that the detach of `relid` from `source_id`'s tree was seen
// pending (pending_detaches): FindRelationChanges reports it as
// kDetachFinished once its link is gone. Idempotent.
// REQUIRES: inside the transaction that forgets the relation.
Status RecordPendingDetach(pg::Connection& conn, const std::string& schema, int source_id,
                           const std::string& relid, const std::string& node);

// Forgets a detach recorded by RecordPendingDetach (applied, or its source
// released).
Status ForgetPendingDetach(pg::Connection& conn, const std::string& schema, int source_id,
                           const std::string& relid);

}  // namespace trellis::capture
