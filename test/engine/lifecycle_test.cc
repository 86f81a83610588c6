// The statement lifecycle of a defined transform: PAUSE, RESUME, DROP,
// ALTER, and request_backfill.
#include <catch2/catch.hpp>

#include "engine_fixture.h"
#include "widgets.h"

using trellis::Code;
using trellis::test::EngineFixture;
using trellis::test::kWidgets;
using trellis::test::LivePrices;

TEST_CASE("pause, resume, drop and the capture triggers' lifetime", "[engine][lifecycle]") {
  EngineFixture f;
  f.Sql(kWidgets);
  auto s = f.OpenSession();
  REQUIRE(s->Apply("TRANSFORM a FROM widgets SELECT price AS price", true).ok());
  REQUIRE(s->Apply("TRANSFORM b FROM widgets SELECT name AS name", true).ok());
  CHECK(f.Scalar("SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'trellis_%'") == "4");
  CHECK(f.Scalar("SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'trellis_%' AND "
                 "tgenabled = 'A'") == "4");
  auto workers = trellis::BackgroundWorkers::Start(f.Options(), true, 1);
  f.AwaitConverged(*s);

  auto refused = s->Apply("DROP TRANSFORM a", false);
  CHECK(refused.status().code() == Code::kValidation);
  CHECK_THAT(refused.status().message(), Catch::Contains("PAUSE TRANSFORM a"));

  auto paused = s->Apply("PAUSE TRANSFORM a", false);
  REQUIRE(paused.ok());
  CHECK(paused->tag == "paused");
  CHECK(s->ReadStatus("a")->status == "paused");
  CHECK(s->ReadStatus("a")->paused_kind == "operator");
  f.Sql("UPDATE widgets SET price = 0 WHERE id < 10");
  f.AwaitConverged(*s);  // a paused transform does not hold convergence up
  CHECK(f.Scalar("SELECT price FROM a WHERE id = 1") == "1.5");
  auto resumed = s->Apply("RESUME TRANSFORM a", false);
  REQUIRE(resumed.ok());
  CHECK(resumed->tag == "resumed");
  CHECK(resumed->addresses == std::vector<std::string>{"a"});
  f.AwaitConverged(*s);
  CHECK(f.Scalar("SELECT price FROM a WHERE id = 1") == "0");

  auto col = s->Apply("PAUSE TRANSFORM b.name", false);
  REQUIRE(col.ok());
  CHECK(col->addresses == std::vector<std::string>{"b.name"});
  f.Sql("UPDATE widgets SET name = 'changed' WHERE id = 3");
  f.AwaitConverged(*s);
  CHECK(f.Scalar("SELECT name FROM b WHERE id = 3") == "w3");
  auto col_resumed = s->Apply("RESUME TRANSFORM b.name", false);
  REQUIRE(col_resumed.ok());
  CHECK(col_resumed->addresses == std::vector<std::string>{"b.name"});
  f.AwaitConverged(*s);
  CHECK(f.Scalar("SELECT name FROM b WHERE id = 3") == "changed");

  REQUIRE(s->Apply("PAUSE TRANSFORM a", false).ok());
  auto dropped = s->Apply("DROP TRANSFORM a", false);
  REQUIRE(dropped.ok());
  CHECK(dropped->tag == "dropped");
  CHECK(f.Scalar("SELECT to_regclass('a') IS NULL") == "t");
  CHECK(f.Scalar("SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'trellis_%'") == "4");
  REQUIRE(s->Apply("PAUSE TRANSFORM b", false).ok());
  REQUIRE(s->Apply("DROP TRANSFORM b", false).ok());
  CHECK(f.Scalar("SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'trellis_%'") == "0");
  CHECK(f.Scalar("SELECT count(*) FROM trellis.sources") == "0");
  CHECK(s->Apply("RESUME TRANSFORM nope", false).status().code() == Code::kNotFound);
}

TEST_CASE("alter adds, changes and drops columns and rebuilds only them", "[engine][alter]") {
  LivePrices live(1);
  auto& f = live.f;
  auto& s = live.s;

  auto added = s->Apply("ALTER TRANSFORM a ADD COLUMN upper(name) AS shout", false);
  REQUIRE(added.ok());
  CHECK(added->tag == "altered");
  f.AwaitConverged(*s);
  CHECK(f.Differences("a", "SELECT id, price, upper(name) FROM widgets") == 0);

  REQUIRE(s->Apply("ALTER TRANSFORM a ALTER COLUMN price AS price * 2", false).ok());
  f.AwaitConverged(*s);
  CHECK(f.Differences("a", "SELECT id, price * 2, upper(name) FROM widgets") == 0);

  REQUIRE(s->Apply("ALTER TRANSFORM a ALTER COLUMN shout AS length(name)", false).ok());
  f.AwaitConverged(*s);
  CHECK(f.Differences("a", "SELECT id, price * 2, length(name) FROM widgets") == 0);

  REQUIRE(s->Apply("ALTER TRANSFORM a DROP COLUMN shout", false).ok());
  CHECK(f.Differences("a", "SELECT id, price * 2 FROM widgets") == 0);
  auto defs = s->Definitions();
  REQUIRE(defs.ok());
  REQUIRE(defs->size() == 1);
  CHECK(defs->front().statement == "TRANSFORM a FROM widgets SELECT price * 2 AS price");

  CHECK(s->Apply("ALTER TRANSFORM a DROP COLUMN id", false).status().code() == Code::kValidation);
  CHECK(s->Apply("ALTER TRANSFORM a ADD COLUMN 1 AS price", false).status().code() ==
        Code::kAlreadyExists);
  CHECK(s->Apply("ALTER TRANSFORM a ALTER COLUMN nope AS 1", false).status().code() ==
        Code::kNotFound);
  CHECK(s->Apply("ALTER TRANSFORM a ADD COLUMN random() AS r", false).status().code() ==
        Code::kValidation);
}

TEST_CASE("request_backfill rebuilds a target that was changed behind Trellis's back",
          "[engine][backfill]") {
  LivePrices live(1);
  auto& f = live.f;
  auto& s = live.s;
  f.Sql(
      "DELETE FROM a WHERE id < 100; UPDATE a SET price = 0 WHERE id > 1900;"
      "INSERT INTO a VALUES (99999, 1)");
  REQUIRE(s->RequestBackfill("a").ok());
  f.AwaitConverged(*s);
  CHECK(f.Differences("a", "SELECT id, price FROM widgets") == 0);
  CHECK(s->RequestBackfill("nope").code() == Code::kNotFound);
}
