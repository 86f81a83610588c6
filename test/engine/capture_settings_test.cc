// Capture functions pin session settings only for sources whose routed
// columns' text depends on them, and follow a routed column's type change
// (capture/function_settings.h, spec/engine.md "Capture").
#include <catch2/catch.hpp>

#include "capture/functions.h"
#include "engine_fixture.h"
#include "pg/connection.h"

namespace trellis::test {
namespace {

// The SET clauses of the insert capture function of the source over
// `table`, joined by ';' ("" when it pins nothing).
std::string Pins(EngineFixture& f, const std::string& table) {
  return f.Scalar(
      "SELECT coalesce(array_to_string(p.proconfig, ';'), '') FROM trellis.sources s "
      "JOIN pg_proc p ON p.oid = format('trellis.capture_%s_insert()', s.id)::regprocedure "
      "WHERE s.relid = '" +
      table + "'::regclass");
}

constexpr const char* kAllPins =
    "search_path=pg_catalog, pg_temp;DateStyle=ISO,MDY;IntervalStyle=postgres;"
    "extra_float_digits=1;bytea_output=hex";

// Runs the staging worker's re-pin check once; how many sources it
// reinstalled.
int Repin(EngineFixture& f) {
  REQUIRE(f.conn().Exec("BEGIN").ok());
  auto repinned = capture::RepinChangedSources(f.conn(), "trellis");
  REQUIRE(repinned.ok());
  REQUIRE(f.conn().Exec("COMMIT").ok());
  return repinned.value();
}

}  // namespace

TEST_CASE("capture functions pin the settings only for a key type whose text depends on them",
          "[engine][capture]") {
  EngineFixture f;
  f.Sql(
      "CREATE DOMAIN positive AS int CHECK (VALUE > 0); "
      "CREATE DOMAIN day AS date; "
      "CREATE TYPE mood AS ENUM ('sad', 'ok')");
  auto s = f.OpenSession();
  struct Case {
    std::string type;
    bool pinned;
  };
  const std::vector<Case> cases = {
      {"int", false},      {"bigint", false}, {"text", false},     {"varchar(9)", false},
      {"numeric", false},  {"uuid", false},   {"boolean", false},  {"int[]", false},
      {"positive", false}, {"mood", false},   {"date", true},      {"timestamptz", true},
      {"interval", true},  {"float8", true},  {"bytea", true},     {"regclass", true},
      {"day", true},       {"date[]", true},  {"int4range", true}, {"time", true},
  };
  int n = 0;
  for (const Case& c : cases) {
    const std::string table = "k" + std::to_string(++n);
    f.Sql("CREATE TABLE " + table + " (id " + c.type + " PRIMARY KEY, v int)");
    auto applied = s->Apply("TRANSFORM " + table + "_t FROM " + table + " SELECT v AS v", true);
    INFO(c.type);
    REQUIRE(applied.ok());
    CHECK(Pins(f, table) == (c.pinned ? kAllPins : ""));
  }
}

TEST_CASE("a GROUP BY over a date pins the settings; over ints it does not", "[engine][capture]") {
  EngineFixture f;
  f.Sql(
      "CREATE TABLE days (id int PRIMARY KEY, day date, n int); "
      "CREATE TABLE counts (id int PRIMARY KEY, g int, n int)");
  auto s = f.OpenSession();
  REQUIRE(s->Apply("TRANSFORM per_day FROM days SELECT day, sum(n) AS n GROUP BY day", true).ok());
  REQUIRE(s->Apply("TRANSFORM per_g FROM counts SELECT g, sum(n) AS n GROUP BY g", true).ok());
  CHECK(Pins(f, "days") == kAllPins);
  CHECK(Pins(f, "counts") == "");
}

TEST_CASE("a routed column's type change re-pins its capture functions at the next check",
          "[engine][capture]") {
  EngineFixture f;
  f.Sql("CREATE TABLE events (id int PRIMARY KEY, at text, n int)");
  f.Sql("INSERT INTO events SELECT g, '2024-02-0' || (g % 5 + 1), g FROM generate_series(1, 20) g");
  auto s = f.OpenSession();
  REQUIRE(s->Apply("TRANSFORM per_at FROM events SELECT at, sum(n) AS n GROUP BY at", true).ok());
  CHECK(Pins(f, "events") == "");
  CHECK(Repin(f) == 0);

  // Functions an engine before this rule installed pinned every source: the
  // check takes the pins off one that does not need them.
  f.Sql("ALTER FUNCTION trellis.capture_1_insert() SET search_path = pg_catalog, pg_temp");
  CHECK(Repin(f) == 1);
  CHECK(Pins(f, "events") == "");

  // Now the group column's text follows DateStyle. Until the check runs,
  // a writer in another DateStyle routes it in its own form; after, in the
  // form the engine reads.
  f.Sql("ALTER TABLE events ALTER COLUMN at TYPE date USING at::date");
  const std::string routed =
      "SELECT string_agg(routing[1][2], ',') FROM trellis.capture WHERE op = 'U'";
  f.Sql("SET DateStyle = 'German, DMY'");
  f.Sql("UPDATE events SET n = n + 1 WHERE id = 2");
  CHECK(f.Scalar(routed) == "03.02.2024");
  f.Sql("DELETE FROM trellis.capture");
  CHECK(Repin(f) == 1);
  CHECK(Pins(f, "events") == kAllPins);
  CHECK(Repin(f) == 0);
  f.Sql("UPDATE events SET n = n + 1 WHERE id = 2");
  CHECK(f.Scalar(routed) == "2024-02-03");
  CHECK(f.Scalar("SELECT current_setting('DateStyle')") == "German, DMY");
  f.Sql("RESET DateStyle");

  f.Sql("ALTER TABLE events ALTER COLUMN at TYPE text USING at::text");
  CHECK(Repin(f) == 1);
  CHECK(Pins(f, "events") == "");
}

}  // namespace trellis::test
