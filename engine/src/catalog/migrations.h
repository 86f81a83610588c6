// The catalog schema and its versioned migrations.
#pragma once

#include <cstdint>
#include <string>

#include "pg/connection.h"
#include "trellis/status.h"

namespace trellis::catalog {

// The catalog version this engine reads and writes.
inline constexpr int kCatalogVersion = 25;

// The advisory lock key (pg_advisory_lock(bigint)) migrations take, so many
// nodes can migrate at once safely.
int64_t MigrationLockKey(const std::string& schema);

// Creates or upgrades the catalog in `schema` to `version` (tests stop at an
// older version to test the upgrade from it). Idempotent; serialised across
// sessions by the migration advisory lock.
[[nodiscard]] Status Migrate(pg::Connection& conn, const std::string& schema,
                             int version = kCatalogVersion);

// Ok when the catalog exists at kCatalogVersion; a not_migrated error naming
// the fix otherwise.
[[nodiscard]] Status CheckMigrated(pg::Connection& conn, const std::string& schema);

}  // namespace trellis::catalog
