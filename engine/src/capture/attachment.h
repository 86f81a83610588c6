// Which attachment of a partition or inheritance child capture saw. A
// relation detached and attached again (or NO INHERIT then INHERIT) between
// two rounds of the relation sync is under the source both times the sync
// looks, yet writes naming it in between were not writes of the source, and
// a recompute in between read the source without its rows. So
// `source_relations.attachment` records the identity of the pg_inherits row
// that linked the relation when capture saw it, and the sync and staging
// compare it with the row there now (spec/engine.md "Partitioned and
// inherited sources", "Deltas").
#pragma once

#include <string>

namespace trellis::capture {

// A bigint SQL expression: the identity of the pg_inherits row `link` (an
// alias), its inserting transaction's xmin made a 64-bit xid. Every attach,
// partition creation and INHERIT inserts a new row, so a new identity; a
// detach deletes the row (CONCURRENTLY first marks it pending, which every
// reader here counts as detached already). Freezing keeps the raw xmin
// PostgreSQL shows, so the value is the same in every later snapshot until
// the 32-bit xid counter comes round to the same value again (then it
// changes once, and the relation is corrected as if re-attached: safe).
//
// The 64-bit value is the latest xid with the row's low 32 bits that is
// below the snapshot's xmax and not running: a row seen now was inserted by
// a finished transaction, so that is its real xid unless the row is over
// 2^32 xids old (frozen). A later attachment's transaction is running or
// not yet begun when the value is recorded under the relation's lock, so it
// never equals a recorded value: a running xid is never taken (the value
// steps back 2^32 below every running xid instead), and a later xid comes
// out as itself or higher. pg_xact_status, unlike the snapshot's xip list,
// also sees running subtransactions.
std::string AttachmentSql(const std::string& link);

}  // namespace trellis::capture
