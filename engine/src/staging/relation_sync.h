// Keeps capture and the targets in step with the relations under each
// source (capture/relations.h): a partition created or attached, or a child
// made to inherit, gets the source's capture triggers; one detached, dropped
// or no longer inheriting loses them; and every target that reads the source
// is corrected for the rows that came or went without capture seeing them.
//
// A correction is ledger pages, drained like any others, recorded in the
// catalog's `corrections` table so status can list it (`correcting`) until
// its pages are gone:
// - added: the keys the relation's rows reach (its rows fed to each plan's
//   dirty-key SQL as if they had just been inserted), plus, for a target
//   keyed by the source's own key, the target keys whose source row is gone
//   (a row deleted by naming the relation before its capture existed);
// - detached: the keys its rows reached (read from the detached table, fed
//   as deletes);
// - dropped: for a target keyed by the source's key, the target keys whose
//   source row is gone.
// A target computed from the source's rows in any other way (one reading it
// as a joined table, or grouping it) is rebuilt for an added or dropped
// relation instead: the rows a write naming the relation removed before
// capture covered it are not there to be read. A target that takes deltas
// from the source (a group transform on the delta path) is rebuilt for a
// detach once it is final too: a writer that began before a DETACH ...
// CONCURRENTLY can change the partition's rows after a recompute left them
// out, and only a read after the detach's end sees what it did. A detach
// seen pending is corrected at once, recorded (pending_detaches), and
// rebuilds when the sync finds it final (spec/engine.md "A detach that is
// final").
#pragma once

#include <string>

#include "pg/connection.h"
#include "trellis/status.h"

namespace trellis::staging {

// Applies every relation change found now, each in its own transaction,
// waiting for each relation's lock for at most a short while (a change whose
// lock is busy is retried on the next call). Returns how many it applied.
// Then deletes the corrections whose pages are all drained.
Result<int> SyncRelations(pg::Connection& conn, const std::string& schema);

}  // namespace trellis::staging
