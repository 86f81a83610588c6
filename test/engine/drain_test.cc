// Drain: a target built and kept equal to its definition, and a drain or
// build that meets a schema change.
#include <catch2/catch.hpp>

#include <chrono>
#include <thread>

#include "engine_fixture.h"
#include "pg/connection.h"
#include "widgets.h"

using trellis::test::AwaitStatus;
using trellis::test::EngineFixture;
using trellis::test::kPricesQuery;
using trellis::test::kWidgets;
using trellis::test::LivePrices;

TEST_CASE("a projection backfills, follows writes and goes live", "[engine][drain]") {
  EngineFixture f;
  f.Sql(kWidgets);
  auto s = f.OpenSession();
  auto defined = s->Apply(
      "TRANSFORM widget_prices FROM widgets SELECT price AS price, name AS label "
      "WHERE price > 10",
      true);
  REQUIRE(defined.ok());
  CHECK(defined->tag == "transform_defined");
  CHECK(defined->target == "widget_prices");
  auto workers = trellis::BackgroundWorkers::Start(f.Options(), true, 2);
  f.AwaitConverged(*s);
  CHECK(f.Differences("widget_prices", kPricesQuery) == 0);

  f.Sql(
      "INSERT INTO widgets (id, name, price) SELECT g, 'n', g FROM generate_series(3000, 3500) g");
  f.Sql("UPDATE widgets SET price = 1 WHERE id BETWEEN 100 AND 150");        // leave the WHERE
  f.Sql("UPDATE widgets SET price = 99 WHERE id BETWEEN 1 AND 5");           // enter the WHERE
  f.Sql("UPDATE widgets SET id = id + 10000 WHERE id BETWEEN 200 AND 210");  // key change
  f.Sql("DELETE FROM widgets WHERE id % 17 = 0");
  f.AwaitConverged(*s);
  CHECK(f.Differences("widget_prices", kPricesQuery) == 0);

  CHECK(AwaitStatus(*s, "widget_prices", "live") == "live");
  auto st = s->ReadStatus("widget_prices");
  REQUIRE(st.ok());
  CHECK(st->status == "live");
  CHECK(st->backfill.rows_total == 2000);
  CHECK(st->backlog_pages == 0);
  CHECK(st->last_applied_at_us.has_value());
  REQUIRE(st->columns.size() == 2);
  CHECK(st->columns[0].name == "price");
  CHECK(st->columns[1].name == "label");
}

TEST_CASE("a source column dropped behind Trellis's back pauses the transform until RESUME",
          "[engine][schema_change]") {
  LivePrices live(1);
  auto& f = live.f;
  auto& s = live.s;
  f.Sql("ALTER TABLE widgets DROP COLUMN price");
  f.Sql("UPDATE widgets SET name = 'renamed' WHERE id = 1");  // a drain now fails
  CHECK(AwaitStatus(*s, "a", "paused") == "paused");
  auto st = s->ReadStatus("a");
  REQUIRE(st.ok());
  CHECK(st->paused_kind == "schema_change");
  CHECK_THAT(st->paused_reason.value_or(""), Catch::Contains("\"price\" does not exist"));
  CHECK_THAT(st->paused_reason.value_or(""), Catch::Contains("RESUME TRANSFORM a"));
  // Fixed: the column is back (with other values); RESUME rebuilds.
  f.Sql("ALTER TABLE widgets ADD COLUMN price numeric DEFAULT 3");
  REQUIRE(s->Apply("RESUME TRANSFORM a", false).ok());
  f.AwaitConverged(*s);
  CHECK(f.Differences("a", "SELECT id, price FROM widgets") == 0);
}

TEST_CASE("a schema change under a transform compiled into stages advises what it accepts",
          "[engine][schema_change]") {
  EngineFixture f;
  f.Sql(kWidgets);
  auto s = f.OpenSession();
  // HAVING compiles into a hidden grouping and a projection over it, which
  // ALTER TRANSFORM refuses: the advice names the user's transform and
  // defining it again, never ALTER or the hidden stage.
  REQUIRE(s->Apply("TRANSFORM busy FROM widgets SELECT active AS active, sum(price) AS total "
                   "GROUP BY active HAVING count(*) > 1",
                   true)
              .ok());
  auto workers = trellis::BackgroundWorkers::Start(f.Options(), true, 2);
  f.AwaitConverged(*s);
  // sum() has no text form: the drain meets the change. (Capture turns the
  // routed price to text either way, so writes to widgets go on.)
  f.Sql("ALTER TABLE widgets ALTER COLUMN price TYPE text");
  f.Sql("UPDATE widgets SET name = 'renamed' WHERE id = 1");  // a drain now fails
  CHECK(AwaitStatus(*s, "busy", "paused") == "paused");
  auto st = s->ReadStatus("busy");
  REQUIRE(st.ok());
  const std::string reason = st->paused_reason.value_or("");
  CHECK_THAT(reason, Catch::Contains("DROP TRANSFORM busy and define it again"));
  CHECK_THAT(reason, Catch::Contains("RESUME TRANSFORM busy"));
  CHECK_THAT(reason, !Catch::Contains("ALTER TRANSFORM busy to match"));
  CHECK_THAT(reason, !Catch::Contains("__trellis_"));
}

TEST_CASE("a schema change during the first build pauses it; RESUME builds it again",
          "[engine][schema_change]") {
  EngineFixture f;
  f.Sql(kWidgets);
  auto s = f.OpenSession();
  REQUIRE(s->Apply("TRANSFORM a FROM widgets SELECT price AS price", true).ok());
  f.Sql("ALTER TABLE widgets RENAME COLUMN price TO cost");
  auto workers = trellis::BackgroundWorkers::Start(f.Options(), true, 2);
  CHECK(AwaitStatus(*s, "a", "paused") == "paused");
  CHECK(s->ReadStatus("a")->paused_kind == "schema_change");
  f.Sql("ALTER TABLE widgets RENAME COLUMN cost TO price");
  REQUIRE(s->Apply("RESUME TRANSFORM a", false).ok());
  f.AwaitConverged(*s);
  CHECK(f.Differences("a", "SELECT id, price FROM widgets") == 0);
  CHECK(s->ReadStatus("a")->status != "paused");
}

TEST_CASE("a drain that finds a key bucket held drains other transforms meanwhile",
          "[engine][drain]") {
  EngineFixture f;
  f.Sql(
      "CREATE TABLE hot (id int PRIMARY KEY, v int); "
      "CREATE TABLE cold (id int PRIMARY KEY, v int)");
  auto s = f.OpenSession();
  REQUIRE(s->Apply("TRANSFORM hot_v FROM hot SELECT v AS v", true).ok());
  REQUIRE(s->Apply("TRANSFORM cold_v FROM cold SELECT v AS v", true).ok());
  auto workers = trellis::BackgroundWorkers::Start(f.Options(), true, 1);
  f.AwaitConverged(*s);

  // Another session holds every key bucket of hot_v, as a drain running one
  // long statement over a hot bucket does (bench/README.md "Fleet soak",
  // finding 3).
  auto holder = trellis::pg::Connection::Open(f.url(), "engine_test");
  REQUIRE(holder.ok());
  REQUIRE(holder.value()
              ->Exec("SELECT count(pg_advisory_lock(hashtext('trellis.bucket:trellis'), "
                     "t.id * 64 + g)) FROM trellis.transforms t, generate_series(0, 63) g "
                     "WHERE t.target_name = 'hot_v'")
              .ok());
  // hot_v's page is the older one, so the one drain thread claims it first.
  f.Sql("INSERT INTO hot VALUES (1, 1)");
  f.Sql("INSERT INTO cold VALUES (1, 1)");
  // The drain thread must get to cold_v while hot_v's buckets stay held:
  // waiting for them, it never would.
  bool cold_drained = false;
  for (int i = 0; i < 600 && !cold_drained; ++i) {
    cold_drained = f.Scalar("SELECT count(*) FROM cold_v") == "1";
    if (!cold_drained) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  CHECK(cold_drained);
  CHECK(f.Scalar("SELECT count(*) FROM hot_v") == "0");

  // Released, hot_v's page drains too.
  REQUIRE(holder.value()->Exec("SELECT pg_advisory_unlock_all()").ok());
  f.AwaitConverged(*s);
  CHECK(f.Differences("hot_v", "SELECT id, v FROM hot") == 0);
  CHECK(f.Differences("cold_v", "SELECT id, v FROM cold") == 0);
}

// The recompute of a set of keys puts its decoded keys beside the user's FROM
// list: an alias of the user's must not meet one of the statement's own.
TEST_CASE("a projection and a join aliased d drain their writes", "[engine][drain]") {
  EngineFixture f;
  f.Sql(kWidgets);
  f.Sql(
      "CREATE TABLE makers (id bigint PRIMARY KEY, label text);"
      "INSERT INTO makers SELECT g, 'maker ' || g FROM generate_series(1, 2000) g");
  auto s = f.OpenSession();
  REQUIRE(s->Apply("TRANSFORM by_d FROM widgets d SELECT d.price AS price", true).ok());
  REQUIRE(s->Apply("TRANSFORM joined_d FROM widgets w JOIN makers d ON d.id = w.id "
                   "SELECT w.name AS name, d.label AS label",
                   true)
              .ok());
  auto workers = trellis::BackgroundWorkers::Start(f.Options(), true, 2);
  f.AwaitConverged(*s);
  f.Sql("UPDATE widgets SET price = price + 1, name = name || '+' WHERE id % 7 = 0");
  f.Sql("UPDATE makers SET label = label || '+' WHERE id % 5 = 0");
  f.AwaitConverged(*s);
  CHECK(f.Differences("by_d", "SELECT id, price FROM widgets") == 0);
  CHECK(f.Differences("joined_d",
                      "SELECT w.id, w.name, m.label FROM widgets w JOIN makers m "
                      "ON m.id = w.id") == 0);
}
