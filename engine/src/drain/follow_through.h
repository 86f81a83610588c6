// A drain follows its writes through the stages that read them, in its own
// transaction.
//
// A drain whose target another transform reads stages its writes' pages
// for the readers before it commits (staging::StageOwnWrites). Left there,
// each next stage is another drain transaction: a commit, a wake, a claim,
// the transform loaded again, then the next commit. A three-stage transform
// paid that twice per write (bench/README.md "Freshness across stages").
// Following, the drain claims those readers' pages itself, in the same
// transaction, under a savepoint per claim, and applies them as any drain
// would: the same claim (oldest page first, the same limits, the
// transform's lock and the buckets' locks taken with try-locks), the same
// chosen path, the same executor and record. Then their readers', and so
// on, so a write goes through every stage in one commit.
//
// Why it stays exactly once: a claim locks its pages FOR UPDATE and a
// bucket's lock is held by one drain at a time, whichever transaction
// claims, so no page is applied twice and no two drains of one key
// interleave; each statement reads the writes of the stages before it in
// the same transaction, as a next drain would read them once committed.
//
// One order rule keeps the deltas exact. A group's recompute records the
// snapshot it read (plan/group_deltas.h), and a later delta row whose writer
// that snapshot saw is skipped, its change already counted. A snapshot taken
// in this transaction sees this transaction's own writes, even those it
// makes after it. So once a transform is drained here, no transform it
// reads (directly or through others) is drained in the same transaction:
// its writes would stage delta rows, under this transaction's xid, for
// groups recomputed before those writes, and they would be skipped. A
// followed claim therefore takes only sole readers of what was drained
// that are upstream of nothing drained; such pages wait for the next drain, whose
// transaction is another. (In a chain or a compiled statement, whose
// stages read each other in a line, nothing is left by this rule; a graph
// where one transform reads two stages of another may be.)
//
// A second rule: only a reader whose one input is a drained stage is
// followed; a reader of two inputs (a join, a self join) is not. Its other
// input's changes are staged by looking its rows up through the drained
// stage's target (the rows of S a customer's rename reaches), and a
// staging statement cannot see this transaction's writes. A customer
// renamed after the followed recompute read customers, and staged before
// this transaction commits, would find the moved row of S under its old
// customer: neither the recompute nor the rename's pages would cover it,
// and the target would keep the old name (derived_differential_test failed
// so, once in a full run). Left to a next drain, the reader's recompute
// runs after this commit, which is what the join's staging relies on. A
// reader of one input is staged only from that input's own row versions,
// and its drains of one key are serialized by the bucket locks, so a
// change this recompute missed has its own page, claimable once its
// writer commits.
//
// A followed drain whose own staging left its capture rows (to the
// staging worker, which finds a reader they fail for) ends the follow: the
// next drain's staging would take those rows too, for the wrong readers.
//
// Following never waits for another drain and never takes a failure on
// itself: a claim it cannot take free (a rebuild's range, a bucket another
// drain holds), a batch that would rebuild while another drain holds the
// transform, a unit the executor did not apply (charged whole, paused) and
// any error are rolled back to the claim's savepoint. The pages, staged
// with the drain's writes, then commit with them and go to the next drain
// as before, where a failure is met, charged and retried by the usual
// path; the work already followed commits. Only a broken connection fails
// the drain.
#pragma once

#include <string>

#include "drain/drain_page.h"
#include "drain/unit_executor.h"
#include "pg/connection.h"
#include "trellis/status.h"

namespace trellis::drain {

// At most this many claims follow one drain: a long chain or a deep
// backlog of the readers still commits the first stage's work soon, and
// the rest goes to the next drains.
inline constexpr int kMaxFollowedClaims = 8;

struct Followed {
  int claims = 0;  // claims applied
  long pages = 0;
  long keys = 0;
  long staged_own_writes = 0;  // capture rows the followed drains staged for their readers
  // Work is left for later drains: readers' pages not taken (busy, failed,
  // or past kMaxFollowedClaims), so the drains are woken after the commit.
  bool pages_left = false;
  // A followed drain's writes were left to the staging worker (its own
  // staging did not take them): the staging worker is woken after the
  // commit (the notify to other ports' is already sent in the transaction).
  bool staging_left = false;
};

// Follows the drain of transform `drained_id`, whose readers' pages it
// staged in the open transaction: drains them, then their readers' pages,
// up to kMaxFollowedClaims claims. REQUIRES: in the drain's transaction,
// after its own writes were staged; `stage_own_writes` set.
Result<Followed> FollowThrough(pg::Connection& conn, const std::string& schema, int drained_id,
                               UnitExecutor& executor, const StageOwnWritesFn& stage_own_writes);

}  // namespace trellis::drain
