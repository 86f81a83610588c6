// Group transforms over partitioned and inherited sources take deltas
// (spec/engine.md "Deltas"), and a write naming a relation that has just
// left the source is recomputed instead: driven step by step (staging
// batch, drain, relation sync) so that each step's delta rows can be seen
// and the sync can be held back while the detached relation is written.
#include <catch2/catch.hpp>

#include "build_steps.h"
#include "engine_fixture.h"
#include "partition_sources.h"
#include "pipeline_steps.h"
#include "staging/relation_sync.h"
#include "trellis/workers.h"

namespace trellis::test {
namespace {

// Rows of the target's visible columns that differ from the query's.
long Differences(EngineFixture& f) {
  return SelectDifferences(f, "SELECT g, n, total, top FROM totals", kTotalsQuery);
}

// Delta rows staged for group `key` (a text[] literal), pending.
std::string DeltaRowsOf(EngineFixture& f, const std::string& key) {
  return f.Scalar("SELECT count(*) FROM trellis.delta_rows WHERE key = '" + key + "'");
}

// The detach problem, deterministically: after `leave` (SQL that takes
// orders_p1 out of the source), a recompute of group 7 reads the source
// without orders_p1's rows and records it; then a write naming orders_p1
// deletes its row of group 7 before the relation sync has seen the change
// (its triggers are still there). Taken as a delta, that -1 would remove
// the row from group 7 a second time; it must be recomputed instead.
void WriteAfterLeaving(EngineFixture& f, Session& s, const std::string& leave) {
  auto conn = ConnectBuilder(f);
  // Writes through the parent and naming the relation are deltas.
  f.Sql("INSERT INTO orders VALUES (200, 0, 1, 10)");
  f.Sql("UPDATE orders_p1 SET amount = amount + 1 WHERE g = 2");
  StageStep(*conn);
  CHECK(DeltaRowsOf(f, "{1}") == "1");
  CHECK(std::stol(DeltaRowsOf(f, "{2}")) > 1);
  DrainAllPages(*conn);
  CHECK(Differences(f) == 0);

  f.Sql(leave);
  REQUIRE(conn->Query(TotalsPlan(*conn)->RecomputeKeysSql(), {"{{7}}"}).ok());
  CHECK(f.Scalar("SELECT n FROM totals WHERE g = 7") == "1");

  f.Sql("DELETE FROM orders_p1 WHERE id = 100");
  CHECK(f.Scalar("SELECT count(*) FROM trellis.capture WHERE relid = 'orders_p1'::regclass") ==
        "1");
  StageStep(*conn);
  // The page lists group 7, with no delta row: the drain recomputes it.
  CHECK(DeltaRowsOf(f, "{7}") == "0");
  CHECK(f.Scalar("SELECT count(*) FROM trellis.pages WHERE keys = '{{7}}'") == "1");
  DrainAllPages(*conn);
  CHECK(f.Scalar("SELECT n FROM totals WHERE g = 7") == "1");

  // Then the sync notices, removes the relation's triggers and corrects
  // the groups its rows are in.
  auto workers = BackgroundWorkers::Start(f.Options(), true, 1);
  f.AwaitConverged(s);
  CHECK(f.Scalar("SELECT count(*) FROM trellis.source_relations "
                 "WHERE relid = 'orders_p1'::regclass") == "0");
  CHECK(Differences(f) == 0);
  f.Sql("INSERT INTO orders VALUES (201, 0, 7, 1)");
  f.AwaitConverged(s);
  CHECK(Differences(f) == 0);
}

}  // namespace

TEST_CASE("a partitioned source: a write naming a just-detached partition is not a delta",
          "[engine][partitions][deltas]") {
  EngineFixture f;
  auto s = BuiltTotals(f, kPartitionedOrders);
  WriteAfterLeaving(f, *s, "ALTER TABLE orders DETACH PARTITION orders_p1");
}

TEST_CASE("an inheritance parent: a write naming a child that left (NO INHERIT) is not a delta",
          "[engine][partitions][deltas]") {
  EngineFixture f;
  auto s = BuiltTotals(f, kInheritedOrders);
  WriteAfterLeaving(f, *s, "ALTER TABLE orders_p1 NO INHERIT orders");
}

TEST_CASE("a partitioned source: an attached partition's rows enter, later writes are deltas",
          "[engine][partitions][deltas]") {
  EngineFixture f;
  auto s = BuiltTotals(f, kPartitionedOrders);
  f.Sql(R"sql(
CREATE TABLE orders_p2 (LIKE orders);
INSERT INTO orders_p2 SELECT i, 2, i % 4, i FROM generate_series(300, 320) i;
ALTER TABLE orders ATTACH PARTITION orders_p2 FOR VALUES IN (2);
)sql");
  {
    // The sync captures it and rebuilds the target for its rows.
    auto workers = BackgroundWorkers::Start(f.Options(), true, 1);
    f.AwaitConverged(*s);
  }
  CHECK(Differences(f) == 0);
  auto conn = ConnectBuilder(f);
  f.Sql("UPDATE orders_p2 SET g = 9 WHERE id = 300");
  StageStep(*conn);
  CHECK(DeltaRowsOf(f, "{9}") == "1");
  DrainAllPages(*conn);
  CHECK(Differences(f) == 0);
  // Dropped: its rows leave by a rebuild.
  f.Sql("DROP TABLE orders_p2");
  auto workers = BackgroundWorkers::Start(f.Options(), true, 1);
  f.AwaitConverged(*s);
  CHECK(Differences(f) == 0);
  CHECK(f.Scalar("SELECT count(*) FROM totals WHERE g = 9") == "0");
}

TEST_CASE("a partition left half detached by an interrupted DETACH CONCURRENTLY counts as gone",
          "[engine][partitions][deltas]") {
  EngineFixture f;
  auto s = BuiltTotals(f, kPartitionedOrders);
  // A snapshot that still sees orders_p1 attached holds the detach in its
  // second transaction; cancelling it there leaves the partition pending,
  // which new snapshots of orders no longer read.
  LeavePendingDetach(f, "orders_p1", "SELECT count(*) FROM orders");

  // A write naming it is not a delta; the sync takes it as detached.
  auto conn = ConnectBuilder(f);
  f.Sql("DELETE FROM orders_p1 WHERE id = 100");
  StageStep(*conn);
  CHECK(DeltaRowsOf(f, "{7}") == "0");
  auto workers = BackgroundWorkers::Start(f.Options(), true, 1);
  f.AwaitConverged(*s);
  CHECK(Differences(f) == 0);
  CHECK(f.Scalar("SELECT count(*) FROM trellis.source_relations "
                 "WHERE relid = 'orders_p1'::regclass") == "0");
  // Finishing the detach changes nothing more.
  f.Sql("ALTER TABLE orders DETACH PARTITION orders_p1 FINALIZE");
  f.AwaitConverged(*s);
  CHECK(Differences(f) == 0);
}

}  // namespace trellis::test
