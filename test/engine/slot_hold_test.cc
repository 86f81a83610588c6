// capture/slot.h: a define holds the slot from before it makes sure of it
// until it is over, and DropSlotIfUnused (the health round's, or a DROP's)
// leaves a held slot alone. Before the hold, a health round that ran while
// a define on a catalog with no source yet was between making the slot and
// committing dropped it, and the define failed.
#include <catch2/catch.hpp>

#include "capture/capture_mode.h"
#include "capture/slot.h"
#include "catalog/migrations.h"
#include "pg/connection.h"
#include "throwaway_cluster.h"

namespace trellis::capture {
namespace {

TEST_CASE("a define's slot is not dropped as unused before the define is over", "[logical][slot]") {
  test::ThrowawayCluster cluster(TRELLIS_TESTKIT_BINARY, {"--logical"});
  auto definer_opened = pg::Connection::Open(cluster.url(), "slot_hold_test");
  auto health_opened = pg::Connection::Open(cluster.url(), "slot_hold_health");
  REQUIRE(definer_opened.ok());
  REQUIRE(health_opened.ok());
  pg::Connection& definer = *definer_opened.value();
  pg::Connection& health = *health_opened.value();
  REQUIRE(catalog::Migrate(definer, "trellis").ok());
  auto mode = EnsureCaptureMode(definer, "trellis", "logical");
  REQUIRE(mode.ok());
  auto slots = [&] {
    auto rows = health.Query("SELECT count(*)::text FROM pg_replication_slots");
    REQUIRE(rows.ok());
    return rows->text(0, 0);
  };
  CHECK(slots() == "0");  // no transform, no slot

  {
    auto hold = EnsureSlotBeforeDefine(definer, "trellis");
    REQUIRE(hold.ok());
    CHECK(slots() == "1");
    // No source yet (the define has not committed): unused, but held.
    auto dropped = DropSlotIfUnused(health, "trellis");
    REQUIRE(dropped.ok());
    CHECK_FALSE(dropped.value());
    CHECK(slots() == "1");
  }
  // The define is over and wrote no source: the next round drops it.
  auto dropped = DropSlotIfUnused(health, "trellis");
  REQUIRE(dropped.ok());
  CHECK(dropped.value());
  CHECK(slots() == "0");

  // Triggers mode holds nothing.
  REQUIRE(EnsureCaptureMode(definer, "trellis", "triggers").ok());
  auto none = EnsureSlotBeforeDefine(definer, "trellis");
  REQUIRE(none.ok());
  auto held = health.Query("SELECT count(*)::text FROM pg_locks WHERE locktype = 'advisory'");
  REQUIRE(held.ok());
  CHECK(held->text(0, 0) == "0");
}

}  // namespace
}  // namespace trellis::capture
