// A relation linked to a source and unlinked again, both between two rounds
// of the relation sync, so that the sync never saw the link: writes through
// the parent meanwhile were recomputed with the relation's rows in view,
// and a target keyed by the source kept those rows after they left it
// (spec/engine.md "Attached and detached between two rounds"). The sync
// finds such a relation by the change its catalog rows show since it left
// (left_relations, catalog step 24), or by a link pending detach it never
// recorded. Driven step by step, with no worker running.
#include <catch2/catch.hpp>

#include "build_steps.h"
#include "engine_fixture.h"
#include "partition_sources.h"
#include "pipeline_steps.h"
#include "staging/relation_sync.h"

namespace trellis::test {
namespace {

constexpr const char* kRows = "TRANSFORM order_rows FROM orders SELECT g AS g, amount AS amount";

long RowsDifferences(EngineFixture& f) {
  return SelectDifferences(f, "SELECT id, region, g, amount FROM order_rows",
                           "SELECT id, region, g, amount FROM orders");
}

// One round of the relation sync, then everything staged and drained.
void SyncAndDrain(pg::Connection& conn) {
  auto applied = staging::SyncRelations(conn, "trellis");
  REQUIRE(applied.ok());
  StageStep(conn);
  DrainAllPages(conn);
}

}  // namespace

TEST_CASE("a partition attached and detached again between two rounds leaves no row behind",
          "[engine][partitions]") {
  EngineFixture f;
  auto s = DefineBuilt(f, kPartitionedOrders, kRows);
  auto conn = ConnectBuilder(f);
  // Seen leaving: forgotten, corrected, and watched from then on.
  f.Sql("ALTER TABLE orders DETACH PARTITION orders_p1");
  CHECK(Changes(*conn) == "public.orders_p1:detached");
  SyncAndDrain(*conn);
  CHECK(RowsDifferences(f) == 0);
  CHECK(f.Scalar("SELECT count(*) FROM trellis.left_relations WHERE relid = "
                 "'orders_p1'::regclass") == "1");
  CHECK(Changes(*conn).empty());

  // Back, written through the parent (the recompute reads its rows through
  // the source), and gone again: the sync never looked in between.
  f.Sql("ALTER TABLE orders ATTACH PARTITION orders_p1 FOR VALUES IN (1)");
  f.Sql("UPDATE orders SET amount = amount + 1 WHERE region = 1");
  StageStep(*conn);
  DrainAllPages(*conn);
  CHECK(f.Scalar("SELECT count(*) FROM order_rows WHERE region = 1") == "16");
  f.Sql("ALTER TABLE orders DETACH PARTITION orders_p1");
  // A row it brought in, deleted from it directly: no capture saw that.
  f.Sql("DELETE FROM orders_p1 WHERE id = 1");

  CHECK(Changes(*conn) == "public.orders_p1:detached");
  SyncAndDrain(*conn);
  CHECK(RowsDifferences(f) == 0);
  CHECK(Changes(*conn).empty());
}

TEST_CASE("a new partition written and left pending detach between two rounds is corrected",
          "[engine][partitions]") {
  EngineFixture f;
  auto s = DefineBuilt(f, kPartitionedOrders, kRows);
  auto conn = ConnectBuilder(f);
  f.Sql("CREATE TABLE orders_p2 PARTITION OF orders FOR VALUES IN (2)");
  f.Sql("INSERT INTO orders VALUES (200, 2, 1, 50), (201, 2, 7, 60)");
  StageStep(*conn);
  DrainAllPages(*conn);
  CHECK(f.Scalar("SELECT count(*) FROM order_rows WHERE region = 2") == "2");

  // Left pending by an interrupted DETACH ... CONCURRENTLY.
  LeavePendingDetach(f, "orders_p2", "SELECT count(*) FROM orders WHERE region = 0");

  CHECK(Changes(*conn) == "public.orders_p2:detached");
  SyncAndDrain(*conn);
  CHECK(RowsDifferences(f) == 0);
  // Recorded as a detach seen pending: the sync rebuilds the delta-path
  // targets once it is final, and finds nothing more to do meanwhile.
  CHECK(f.Scalar("SELECT count(*) FROM trellis.pending_detaches WHERE relid = "
                 "'orders_p2'::regclass") == "1");
  CHECK(Changes(*conn).empty());
}

}  // namespace trellis::test
