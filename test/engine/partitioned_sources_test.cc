// Partitioned tables and inheritance parents as sources: capture covers
// every relation under the source, the staging worker follows relations
// that appear or leave (staging/relation_sync.h), and the targets are
// corrected for rows that came or went with them.
#include <catch2/catch.hpp>

#include "engine_fixture.h"
#include "staging/relation_sync.h"
#include "trellis/workers.h"

using trellis::test::EngineFixture;

namespace {

constexpr const char* kEvents = R"sql(
CREATE TABLE events (id int, day int, v int, PRIMARY KEY (id, day)) PARTITION BY RANGE (day);
CREATE TABLE events_a PARTITION OF events FOR VALUES FROM (0) TO (100);
CREATE TABLE events_b PARTITION OF events FOR VALUES FROM (100) TO (200)
  PARTITION BY RANGE (day);
CREATE TABLE events_b1 PARTITION OF events_b FOR VALUES FROM (100) TO (150);
CREATE TABLE events_b2 PARTITION OF events_b FOR VALUES FROM (150) TO (200);
INSERT INTO events SELECT g, g % 200, g FROM generate_series(1, 400) g;
)sql";

constexpr const char* kDefinition = "SELECT id, day, v * 2 FROM events WHERE v % 7 <> 0";

}  // namespace

TEST_CASE("a partitioned source: writes through the parent and naming partitions reach the target",
          "[engine][partitions]") {
  EngineFixture f;
  f.Sql(kEvents);
  auto s = f.OpenSession();
  REQUIRE(s->Apply("TRANSFORM ev FROM events SELECT v * 2 AS v2 WHERE v % 7 <> 0", true).ok());
  // The parent, the sub-partitioned partition and the three leaves.
  CHECK(f.Scalar("SELECT count(*) FROM trellis.source_relations") == "5");
  auto workers = trellis::BackgroundWorkers::Start(f.Options(), true, 2);
  f.AwaitConverged(*s);
  CHECK(f.Differences("ev", kDefinition) == 0);

  f.Sql("INSERT INTO events VALUES (1000, 5, 1), (1001, 120, 2), (1002, 170, 3)");
  f.Sql("INSERT INTO events_a VALUES (1003, 6, 4)");
  f.Sql("INSERT INTO events_b VALUES (1004, 130, 5)");  // an intermediate level
  f.Sql("UPDATE events_b2 SET v = v + 1 WHERE id % 3 = 0");
  f.Sql("DELETE FROM events_b1 WHERE id % 5 = 0");
  f.Sql("UPDATE events SET day = day + 100 WHERE id BETWEEN 10 AND 40 AND day < 100");
  f.AwaitConverged(*s);
  CHECK(f.Differences("ev", kDefinition) == 0);
  CHECK(f.Scalar("SELECT count(*) FROM ev WHERE id >= 1000") == "5");
}

TEST_CASE("partitions created, attached, detached and dropped later are followed",
          "[engine][partitions]") {
  EngineFixture f;
  f.Sql(kEvents);
  auto s = f.OpenSession();
  REQUIRE(s->Apply("TRANSFORM ev FROM events SELECT v * 2 AS v2 WHERE v % 7 <> 0", true).ok());
  auto workers = trellis::BackgroundWorkers::Start(f.Options(), true, 2);
  f.AwaitConverged(*s);

  // Created under the parent, then written by name at once.
  f.Sql("CREATE TABLE events_c PARTITION OF events FOR VALUES FROM (200) TO (300)");
  f.Sql("INSERT INTO events_c SELECT g, 200 + g % 100, g FROM generate_series(2000, 2099) g");
  f.AwaitConverged(*s);
  CHECK(f.Differences("ev", kDefinition) == 0);
  CHECK(f.Scalar("SELECT count(*) FROM ev WHERE day >= 200") != "0");
  // Writes naming it are captured from now on.
  f.Sql("DELETE FROM events_c WHERE id < 2050");
  f.AwaitConverged(*s);
  CHECK(f.Differences("ev", kDefinition) == 0);

  // A table with rows attached.
  f.Sql(
      "CREATE TABLE events_d (LIKE events INCLUDING ALL);"
      "INSERT INTO events_d SELECT g, 300 + g % 100, g FROM generate_series(3000, 3099) g;"
      "ALTER TABLE events ATTACH PARTITION events_d FOR VALUES FROM (300) TO (400);"
      "UPDATE events_d SET v = v + 1 WHERE id % 2 = 0;");
  f.AwaitConverged(*s);
  CHECK(f.Differences("ev", kDefinition) == 0);
  CHECK(f.Scalar("SELECT count(*) FROM trellis.source_relations") == "7");

  // Detached: its rows leave the target; writes to it no longer matter.
  f.Sql("ALTER TABLE events DETACH PARTITION events_a");
  f.AwaitConverged(*s);
  CHECK(f.Differences("ev", kDefinition) == 0);
  CHECK(f.Scalar("SELECT count(*) FROM ev WHERE day < 100") == "0");
  CHECK(f.Scalar("SELECT count(*) FROM pg_trigger WHERE tgrelid = 'events_a'::regclass AND "
                 "tgname LIKE 'trellis%'") == "0");
  f.Sql("INSERT INTO events_a VALUES (5000, 1, 1)");
  // A sub-partitioned partition dropped, with its leaves.
  f.Sql("DROP TABLE events_b");
  f.AwaitConverged(*s);
  CHECK(f.Differences("ev", kDefinition) == 0);
  CHECK(f.Scalar("SELECT count(*) FROM trellis.source_relations") == "3");
  // Corrections are finished once their pages are drained (the staging
  // worker deletes their rows on its next round).
  CHECK(f.Scalar("SELECT count(*) FROM trellis.corrections c WHERE EXISTS (SELECT 1 FROM "
                 "trellis.pages p WHERE p.id = ANY (c.page_ids))") == "0");

  // The last reader dropped: capture leaves every relation.
  REQUIRE(s->Apply("PAUSE TRANSFORM ev", false).ok());
  REQUIRE(s->Apply("DROP TRANSFORM ev", false).ok());
  CHECK(f.Scalar("SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'trellis%'") == "0");
  CHECK(f.Scalar("SELECT count(*) FROM trellis.source_relations") == "0");
}

TEST_CASE("a correction is recorded with its pages and deleted when they are drained",
          "[engine][partitions]") {
  EngineFixture f;
  f.Sql(kEvents);
  auto s = f.OpenSession();
  REQUIRE(s->Apply("TRANSFORM ev FROM events SELECT v * 2 AS v2", true).ok());
  {
    auto workers = trellis::BackgroundWorkers::Start(f.Options(), true, 1);
    f.AwaitConverged(*s);
  }
  // No workers: the sync runs here, and nothing drains its pages.
  f.Sql(
      "CREATE TABLE events_d (LIKE events INCLUDING ALL);"
      "INSERT INTO events_d SELECT g, 300 + g % 100, g FROM generate_series(3000, 3049) g;"
      "ALTER TABLE events ATTACH PARTITION events_d FOR VALUES FROM (300) TO (400);");
  auto applied = trellis::staging::SyncRelations(f.conn(), "trellis");
  REQUIRE(applied.ok());
  CHECK(applied.value() == 1);
  CHECK(f.Scalar("SELECT node || ' ' || change || ' ' || keys_total FROM trellis.corrections") ==
        "public.events_d added 50");
  CHECK(trellis::staging::SyncRelations(f.conn(), "trellis").value() == 0);
  CHECK(f.Scalar("SELECT count(*) FROM trellis.corrections") == "1");
  auto workers = trellis::BackgroundWorkers::Start(f.Options(), true, 1);
  f.AwaitConverged(*s);
  CHECK(f.Differences("ev", "SELECT id, day, v * 2 FROM events") == 0);
  REQUIRE(trellis::staging::SyncRelations(f.conn(), "trellis").ok());
  CHECK(f.Scalar("SELECT count(*) FROM trellis.corrections") == "0");
}

TEST_CASE("an inheritance parent: children now and later are captured", "[engine][partitions]") {
  EngineFixture f;
  f.Sql(R"sql(
CREATE TABLE animals (id int PRIMARY KEY, name text);
CREATE TABLE dogs (bark text) INHERITS (animals);
INSERT INTO animals SELECT g, 'a' || g FROM generate_series(1, 50) g;
INSERT INTO dogs SELECT g, 'd' || g, 'woof' FROM generate_series(100, 150) g;
)sql");
  auto s = f.OpenSession();
  REQUIRE(s->Apply("TRANSFORM names FROM animals SELECT upper(name) AS n", true).ok());
  auto workers = trellis::BackgroundWorkers::Start(f.Options(), true, 1);
  const char* definition = "SELECT id, upper(name) FROM animals";
  f.AwaitConverged(*s);
  CHECK(f.Differences("names", definition) == 0);
  // The trap: a row written naming the child.
  f.Sql("INSERT INTO dogs VALUES (200, 'rex', 'woof')");
  f.Sql("UPDATE dogs SET name = 'fido' WHERE id = 100");
  f.Sql("DELETE FROM dogs WHERE id = 101");
  f.AwaitConverged(*s);
  CHECK(f.Differences("names", definition) == 0);
  CHECK(f.Scalar("SELECT n FROM names WHERE id = 200") == "REX");
  // A child made to inherit later, with rows; then one that stops.
  f.Sql(
      "CREATE TABLE cats (id int PRIMARY KEY, name text, purr bool);"
      "INSERT INTO cats SELECT g, 'c' || g, true FROM generate_series(300, 320) g;"
      "ALTER TABLE cats INHERIT animals;"
      "INSERT INTO cats VALUES (321, 'tom', true);");
  f.AwaitConverged(*s);
  CHECK(f.Differences("names", definition) == 0);
  f.Sql("ALTER TABLE dogs NO INHERIT animals");
  f.AwaitConverged(*s);
  CHECK(f.Differences("names", definition) == 0);
  CHECK(f.Scalar("SELECT count(*) FROM names WHERE id BETWEEN 100 AND 200") == "0");
}
