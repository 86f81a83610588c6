// What logical capture needs of a source's relations: each published in the
// catalog's publication, and a replica identity that makes the server send
// the old values of every routing column (spec/engine.md "Capture feeds"):
//   - a source read only through its key (a projection, a join keyed by the
//     FROM table's key): the default identity, its primary key, is enough;
//     a DELETE sends the key, an UPDATE the old key when it changed;
//   - a source whose routing layout holds other columns (a GROUP BY's group
//     columns, a join's join columns) needs REPLICA IDENTITY FULL, so an
//     UPDATE and a DELETE send the whole old row;
//   - a table without a primary key needs FULL too: with no identity the
//     server refuses every UPDATE and DELETE on a published table.
// Trellis sets FULL where it is needed and may (it owns the table); where
// it may not, defining the reader fails with a validation error naming the
// statement to run. Both need the table's owner, as publishing does.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "catalog/model.h"
#include "pg/connection.h"
#include "trellis/status.h"

namespace trellis::capture {

// The publication of the catalog in `schema` when its sources are captured
// by logical decoding; nullopt when by triggers.
// REQUIRES: the catalog is migrated.
Result<std::optional<std::string>> LogicalPublication(pg::Connection& conn,
                                                      const std::string& schema);

// Publishes relation `relid` (a source's table or a relation under it) in
// `publication`, with a replica identity that sends `routing_columns`.
// REQUIRES: inside a transaction.
Status PublishRelation(pg::Connection& conn, const std::string& publication,
                       const std::vector<std::string>& routing_columns, const std::string& relid);

// Takes, without waiting, the ACCESS EXCLUSIVE lock that PublishRelation's
// ALTER TABLE ... REPLICA IDENTITY FULL needs on `relid` (a source's table)
// and the relations under it, when one of them will need it: in logical
// mode, an owned table whose identity does not hold every column of the
// source's routing layout grown by `routing_columns`. A define calls it
// under its catalog locks, where waiting could close a cycle with a drain
// that read the table and then waits for the `transforms` table the define
// holds (40P01 to the define, seen in CI on 2026-12-03). A table in use
// fails with SQLSTATE 55P03; the define then starts over, taking the lock
// first (LockForIdentityChanges). Nothing to do in trigger mode.
// REQUIRES: inside a transaction.
Status ClaimIdentityChange(pg::Connection& conn, const std::string& schema,
                           const std::string& relid,
                           const std::vector<std::string>& routing_columns);

// Waits for the ACCESS EXCLUSIVE lock of each table in `relids` whose
// replica identity, or a partition's, is not FULL yet and which the role
// owns: the tables whose claim failed in a define's earlier attempt (and
// the others it had resolved), taken before the define's first catalog
// lock, as spec/engine.md "Lock order" puts user tables first. Relations
// gone meanwhile are skipped.
// REQUIRES: inside a transaction.
Status LockForIdentityChanges(pg::Connection& conn, const std::vector<std::string>& relids);

// PublishRelation for the source's table and every relation captured
// under it (after its routing layout grew, or a switch to logical capture).
// REQUIRES: inside a transaction.
Status PublishSource(pg::Connection& conn, const std::string& schema,
                     const std::string& publication, const catalog::Source& source);

}  // namespace trellis::capture
