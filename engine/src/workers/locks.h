// Advisory lock keys. Each catalog schema gets its own key space (hashed from
// the schema name by PostgreSQL's hashtext), so two catalogs in one database
// never contend.
#pragma once

#include <string>

namespace trellis::workers {

// SQL expressions for the first half of a two-int advisory lock key.
// The staging election: pg_try_advisory_lock(hashtext(...), 0).
std::string StagingLockSpace();
// Per transform: drains take it shared, a rebuild's range exclusively, so
// a range's snapshot never interleaves with a drain of the same transform.
std::string TransformLockSpace();
// Per (transform, key bucket): two drains of the same keys never interleave.
std::string BucketLockSpace();

// The number of key buckets a transform's ledger is split into.
inline constexpr int kBuckets = 64;

}  // namespace trellis::workers
