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
  // Registered directly, as define would: EnsureSource captures the
  // partitions under the table, and AddRelation again changes nothing.
  trellis::catalog::Source source;
  {
    auto tx = trellis::pg::Transaction::Begin(f.conn());
    REQUIRE(tx.ok());
    auto table = trellis::capture::ResolveTable(f.conn(), {std::nullopt, "events"});
    REQUIRE(table.ok());
    auto registered = trellis::capture::EnsureSource(f.conn(), "trellis", table.value());
    REQUIRE(registered.ok());
    source = registered.value();
    for (const char* partition : {"events_low", "events_high"}) {
      REQUIRE(trellis::capture::AddRelation(
                  f.conn(), "trellis", source,
                  f.Scalar(std::string("SELECT '") + partition + "'::regclass::oid"), table->oid,
                  partition)
                  .ok());
    }
    REQUIRE(tx.value()->Commit().ok());
  }
  auto triggers = [&] {
    return f.Scalar(
        "SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'trellis_trellis_capture_%'");
  };
  CHECK(triggers() == "12");
  CHECK(f.Scalar("SELECT count(*) FROM trellis.source_relations") == "3");
  // Through the parent: the parent's triggers only. Naming a partition: its own.
  f.Sql("INSERT INTO events VALUES (1, 1), (150, 2)");
  f.Sql("INSERT INTO events_low VALUES (2, 3)");
  f.Sql("UPDATE events_high SET v = 9 WHERE id = 150");
  CHECK(f.Scalar(
            "SELECT string_agg(op::text || ':' || routing::text, ' ' ORDER BY op, routing::text) "
            "FROM trellis.capture") == "I:{{1},{150}} I:{{2}} U:{{150},{150}}");

  // Reinstalling covers every relation; releasing removes capture from all.
  f.Sql("DROP TRIGGER trellis_trellis_capture_update ON events_high");
  {
    auto tx = trellis::pg::Transaction::Begin(f.conn());
    REQUIRE(tx.ok());
    REQUIRE(trellis::capture::Reinstall(f.conn(), "trellis", source).ok());
    REQUIRE(tx.value()->Commit().ok());
  }
  CHECK(triggers() == "12");
  {
    auto tx = trellis::pg::Transaction::Begin(f.conn());
    REQUIRE(tx.ok());
    REQUIRE(trellis::capture::ReleaseIfUnused(f.conn(), "trellis", source).ok());
    REQUIRE(tx.value()->Commit().ok());
  }
  CHECK(triggers() == "0");
  CHECK(f.Scalar("SELECT count(*) FROM trellis.source_relations") == "0");
  CHECK(f.Scalar("SELECT count(*) FROM pg_proc WHERE proname LIKE 'capture\\_%'") == "0");
}

TEST_CASE("the disruption check and RESUME cover a source's every relation",
          "[engine][capture][relations]") {
  EngineFixture f;
  f.Sql(
      "CREATE TABLE items (id int PRIMARY KEY, v int);"
      "INSERT INTO items SELECT g, g FROM generate_series(1, 10) g;");
  auto s = f.OpenSession();
  REQUIRE(s->Apply("TRANSFORM t FROM items SELECT v AS v", true).ok());
  // A child made after the define, captured here directly (the staging
  // worker would, staging/relation_sync.h): its rows are rows of `items`,
  // and writes naming it fire its triggers.
  f.Sql("CREATE TABLE items_child () INHERITS (items)");
  {
    auto tx = trellis::pg::Transaction::Begin(f.conn());
    REQUIRE(tx.ok());
    auto table = trellis::capture::ResolveTable(f.conn(), {std::nullopt, "items"});
    REQUIRE(table.ok());
    auto source = trellis::capture::EnsureSource(f.conn(), "trellis", table.value());
    REQUIRE(source.ok());
    REQUIRE(trellis::capture::AddRelation(f.conn(), "trellis", source.value(),
                                          f.Scalar("SELECT 'items_child'::regclass::oid"),
                                          table->oid, "public.items_child")
                .ok());
    REQUIRE(tx.value()->Commit().ok());
  }
  CHECK(s->DetectCaptureDisruptions()->empty());
  f.Sql("ALTER TABLE items_child DISABLE TRIGGER trellis_trellis_capture_insert");
  auto found = s->DetectCaptureDisruptions();
  REQUIRE(found.ok());
  CHECK(*found == std::vector<std::string>{"public.items_child"});
  f.Sql("INSERT INTO items_child VALUES (100, 100)");  // missed while disabled
  REQUIRE(s->Apply("RESUME TRANSFORM t", false).ok());
  CHECK(s->DetectCaptureDisruptions()->empty());
  auto workers = trellis::BackgroundWorkers::Start(f.Options(), true, 1);
  f.Sql("INSERT INTO items_child VALUES (101, 101)");
  f.Sql("UPDATE items SET v = -v WHERE id <= 3");
  f.AwaitConverged(*s);
  CHECK(f.Differences("t", "SELECT id, v FROM items") == 0);
  CHECK(f.Scalar("SELECT count(*) FROM t WHERE id >= 100") == "2");
}
