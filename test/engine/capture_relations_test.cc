// Capture installs on a table by oid (capture/triggers.h), so the calls
// that capture a source's own table also capture the other relations a
// source will span: a partitioned table's partitions (PostgreSQL fires a
// partition's own statement triggers, not the parent's, for a write that
// names the partition) and, with joins, several tables per transform.
#include <catch2/catch.hpp>

#include "capture/sources.h"
#include "capture/triggers.h"
#include "engine_fixture.h"

using trellis::test::EngineFixture;

TEST_CASE("capture installed on a partition sees writes that name it, once",
          "[engine][capture][relations]") {
  EngineFixture f;
  f.Sql(R"sql(
CREATE TABLE events (id int PRIMARY KEY, v int) PARTITION BY RANGE (id);
CREATE TABLE events_low PARTITION OF events FOR VALUES FROM (0) TO (100);
CREATE TABLE events_high PARTITION OF events FOR VALUES FROM (100) TO (200);
)sql");
  auto s = f.OpenSession();
  // Registered directly: define refuses a partitioned source until capture
  // covers its partitions (define_test.cc).
  {
    auto tx = trellis::pg::Transaction::Begin(f.conn());
    REQUIRE(tx.ok());
    auto table = trellis::capture::ResolveTable(f.conn(), {std::nullopt, "events"});
    REQUIRE(table.ok());
    REQUIRE(trellis::capture::EnsureSource(f.conn(), "trellis", table.value()).ok());
    REQUIRE(tx.value()->Commit().ok());
  }
  const std::string source_id = f.Scalar("SELECT id FROM trellis.sources");
  {
    auto tx = trellis::pg::Transaction::Begin(f.conn());
    REQUIRE(tx.ok());
    for (const char* partition : {"events_low", "events_high"}) {
      REQUIRE(trellis::capture::InstallTriggers(
                  f.conn(), "trellis", std::stoi(source_id),
                  f.Scalar(std::string("SELECT '") + partition + "'::regclass::oid"))
                  .ok());
    }
    REQUIRE(tx.value()->Commit().ok());
  }
  CHECK(f.Scalar("SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'trellis_trellis_capture_%'") ==
        "12");
  // Through the parent: the parent's triggers only. Naming a partition: its own.
  f.Sql("INSERT INTO events VALUES (1, 1), (150, 2)");
  f.Sql("INSERT INTO events_low VALUES (2, 3)");
  f.Sql("UPDATE events_high SET v = 9 WHERE id = 150");
  CHECK(f.Scalar(
            "SELECT string_agg(op::text || ':' || routing::text, ' ' ORDER BY op, routing::text) "
            "FROM trellis.capture") == "I:{{1},{150}} I:{{2}} U:{{150},{150}}");

  // Removal by oid takes a partition's triggers away and leaves the rest.
  {
    auto tx = trellis::pg::Transaction::Begin(f.conn());
    REQUIRE(tx.ok());
    REQUIRE(trellis::capture::RemoveTriggers(f.conn(), "trellis",
                                             f.Scalar("SELECT 'events_high'::regclass::oid"))
                .ok());
    REQUIRE(tx.value()->Commit().ok());
  }
  CHECK(f.Scalar("SELECT count(*) FROM pg_trigger WHERE tgrelid = 'events_high'::regclass") == "0");
  CHECK(f.Scalar("SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'trellis_trellis_capture_%'") ==
        "8");
}
