#include "catalog/migrations.h"

#include <algorithm>
#include <functional>
#include <string_view>
#include <vector>

#include "catalog/migration_steps.h"
#include "sql/quote.h"
#include "sql/row_reader.h"

namespace trellis::catalog {
namespace {

// Each step upgrades the catalog from version (index) to version (index + 1),
// running its parts in order in the migration's one transaction. "{schema}"
// stands for the quoted catalog schema. Steps are append-only: a released
// step is never edited, a change is a new step.
const std::vector<std::vector<std::string_view>>& Steps() {
  static const std::vector<std::vector<std::string_view>> steps = {
      {steps::kV1},                                            // the first catalog
      {steps::kV2Catalog, steps::kV2Capture, steps::kV2Jobs},  // catalog v2
      {steps::kV3Charging},                                    // failure charging
      {steps::kV4Jobs},                                        // builds as jobs
      {steps::kV5Routing},                                     // routed columns per input
      {steps::kV6Relations},                                   // partition corrections
      {steps::kV7TextForms},                                   // capture's text forms
      {steps::kV8Deltas},                                      // group deltas
      {steps::kV9DeltaRows},                                   // delta rows: no FK
      {steps::kV10CaptureRelid},                               // the relation written
      {steps::kV11ArgumentTypes},                              // exact sums
      {steps::kV12Attachments},                                // attachments seen
      {steps::kV13CaptureTruncate},                            // capture kept whole
      {steps::kV14Privileges},                                 // target readers, RLS
      {steps::kV15Stages},                                     // stages and owners
      {steps::kV16PageDeltas},                                 // delta rows per page
      {steps::kV17PendingDetaches},                            // detaches seen pending
      {steps::kV18OuterRoles},                                 // RIGHT and FULL joins
      {steps::kV19SideUnits},                                  // a fan-out join's side units
      {steps::kV20CaptureFeed},                                // capture mode, slot position
      {steps::kV21BatchPaths},                                 // batch paths' costs
      {steps::kV22WholePages},                                 // bulk writes staged whole
      {steps::kV23CoveredPages},                               // pages covered by deltas
      {steps::kV24LeftRelations},                              // relations that left
      {steps::kV25FoldedDeltas},                               // delta rows folded
  };
  return steps;
}

// True when a part holds nothing but blank lines and -- comments (a part a
// component has reserved but not filled), which PostgreSQL would refuse as
// an empty query.
bool IsBlank(std::string_view part) {
  size_t at = 0;
  while (at < part.size()) {
    const size_t end = std::min(part.find('\n', at), part.size());
    std::string_view line = part.substr(at, end - at);
    const size_t first = line.find_first_not_of(" \t\r");
    if (first != std::string_view::npos && line.substr(first, 2) != "--") return false;
    at = end + 1;
  }
  return true;
}

Result<int> ReadVersion(pg::Connection& conn, const std::string& schema) {
  auto exists =
      conn.Query("SELECT to_regclass($1) IS NOT NULL", {sql::Ident(schema) + ".catalog_version"});
  if (!exists.ok()) return exists.status();
  if (exists->text(0, 0) != "t") return 0;
  auto rows = conn.Query(sql::WithSchema("SELECT version FROM {schema}.catalog_version", schema));
  if (!rows.ok()) return rows.status();
  if (rows->empty()) return 0;
  auto version = sql::ScalarInt64(rows.value());
  if (!version.ok()) return version.status();
  return static_cast<int>(version.value());
}

}  // namespace

int64_t MigrationLockKey(const std::string& schema) {
  // A stable 63-bit key derived from the schema name (FNV-1a), so catalogs in
  // different schemas migrate independently.
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : "trellis.migrate:" + schema) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return static_cast<int64_t>(h >> 1);
}

Status Migrate(pg::Connection& conn, const std::string& schema, int version) {
  const std::string key = std::to_string(MigrationLockKey(schema));
  auto tx = pg::Transaction::Begin(conn);
  if (!tx.ok()) return tx.status();
  TRELLIS_RETURN_IF_ERROR(conn.Exec("SELECT pg_advisory_xact_lock($1::bigint)", {key}));
  TRELLIS_RETURN_IF_ERROR(conn.Exec("CREATE SCHEMA IF NOT EXISTS " + sql::Ident(schema)));
  TRELLIS_RETURN_IF_ERROR(conn.Exec(sql::WithSchema(
      "CREATE TABLE IF NOT EXISTS {schema}.catalog_version (version int NOT NULL)", schema)));
  auto found = ReadVersion(conn, schema);
  if (!found.ok()) return found.status();
  const int current = found.value();
  if (current > version) {
    return Status::Validation("the catalog in schema " + sql::Ident(schema) + " is at version " +
                              std::to_string(current) + ", newer than this engine's " +
                              std::to_string(kCatalogVersion) + ": upgrade trellis_pg");
  }
  for (int v = current; v < version; ++v) {
    for (std::string_view part : Steps()[v]) {
      if (IsBlank(part)) continue;
      TRELLIS_RETURN_IF_ERROR(conn.ExecScript(sql::WithSchema(part, schema)));
    }
  }
  TRELLIS_RETURN_IF_ERROR(
      conn.Exec(sql::WithSchema("DELETE FROM {schema}.catalog_version", schema)));
  TRELLIS_RETURN_IF_ERROR(
      conn.Exec(sql::WithSchema("INSERT INTO {schema}.catalog_version VALUES ($1::int)", schema),
                {std::to_string(version)}));
  return tx.value()->Commit();
}

Status CheckMigrated(pg::Connection& conn, const std::string& schema) {
  auto version = ReadVersion(conn, schema);
  if (!version.ok()) return version.status();
  if (version.value() == kCatalogVersion) return Status::OK();
  if (version.value() == 0) {
    return Status::NotMigrated("the Trellis catalog does not exist in schema " +
                               sql::Ident(schema) + ": run Trellis.migrate/1 first");
  }
  return Status::NotMigrated("the Trellis catalog in schema " + sql::Ident(schema) +
                             " is at version " + std::to_string(version.value()) +
                             ", this engine needs " + std::to_string(kCatalogVersion) +
                             ": run Trellis.migrate/1");
}

}  // namespace trellis::catalog
