// The engine through its public API against a real PostgreSQL: catalog,
// define validation, capture -> staging -> drain, backfill, the statement
// lifecycle and convergence. The randomized differential and crash tests
// run through the Elixir package (elixir/test/trellis/engine/differential_test.exs).
#include <catch2/catch.hpp>

#include <thread>

#include "engine_fixture.h"

using trellis::Code;
using trellis::test::EngineFixture;

namespace {

constexpr const char* kWidgets = R"sql(
CREATE TABLE widgets (id bigint PRIMARY KEY, name text, price numeric, meta jsonb,
                      seen timestamptz, active bool);
INSERT INTO widgets
SELECT g, 'w' || g, g * 1.5, jsonb_build_object('g', g), '2024-01-01'::timestamptz + g * interval '1 hour',
       g % 2 = 0
FROM generate_series(1, 2000) g;
)sql";

// Polls a transform's status until it reads `wanted` or about 4 s pass;
// returns the last status read.
std::string AwaitStatus(trellis::Session& s, const std::string& name, const std::string& wanted) {
  std::string status;
  for (int i = 0; i < 200 && status != wanted; ++i) {
    auto st = s.ReadStatus(name);
    if (st.ok()) status = st->status;
    if (status != wanted) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return status;
}

// `widgets` with the live projection `a` (its price) over it, and staging
// plus `drains` drain threads running: where most lifecycle tests start.
struct LivePrices {
  explicit LivePrices(int drains) {
    f.Sql(kWidgets);
    s = f.OpenSession();
    REQUIRE(s->Apply("TRANSFORM a FROM widgets SELECT price AS price", true).ok());
    workers = trellis::BackgroundWorkers::Start(f.Options(), true, drains);
    f.AwaitConverged(*s);
  }
  EngineFixture f;
  std::unique_ptr<trellis::Session> s;
  std::unique_ptr<trellis::BackgroundWorkers> workers;
};

constexpr const char* kPricesQuery =
    "SELECT id, price, name AS label FROM widgets WHERE price > 10";

}  // namespace

TEST_CASE("migrate is idempotent and two sessions can migrate at once", "[engine][catalog]") {
  EngineFixture f;
  auto a = f.OpenSession(false);
  auto b = f.OpenSession(false);
  trellis::Status sa, sb;
  std::thread ta([&] { sa = a->Migrate(); });
  std::thread tb([&] { sb = b->Migrate(); });
  ta.join();
  tb.join();
  CHECK(sa.ok());
  CHECK(sb.ok());
  CHECK(a->Migrate().ok());
  CHECK(f.Scalar("SELECT version FROM trellis.catalog_version") == "1");
}

TEST_CASE("calls before migrate say to run migrate", "[engine][catalog]") {
  EngineFixture f;
  auto s = f.OpenSession(false);
  auto r = s->Apply("TRANSFORM t FROM x SELECT a AS b", false);
  REQUIRE(!r.ok());
  CHECK(r.status().code() == Code::kNotMigrated);
  CHECK_THAT(r.status().message(), Catch::Contains("migrate"));
  CHECK(s->Definitions().status().code() == Code::kNotMigrated);
}

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

TEST_CASE("a long open transaction's writes reach the target after it commits",
          "[engine][convergence]") {
  EngineFixture f;
  f.Sql(kWidgets);
  auto s = f.OpenSession();
  REQUIRE(s->Apply("TRANSFORM p FROM widgets SELECT price AS price", true).ok());
  auto workers = trellis::BackgroundWorkers::Start(f.Options(), true, 1);
  f.AwaitConverged(*s);

  auto writer = trellis::pg::Connection::Open(f.url(), "long_writer");
  REQUIRE(writer.ok());
  REQUIRE(writer.value()->Exec("BEGIN").ok());
  REQUIRE(writer.value()->Exec("UPDATE widgets SET price = -1 WHERE id = 7").ok());
  // Others commit and drain while the writer sits idle in transaction.
  f.Sql("UPDATE widgets SET price = -2 WHERE id = 8");
  f.AwaitConverged(*s);
  CHECK(f.Scalar("SELECT price FROM p WHERE id = 8") == "-2");
  CHECK(f.Scalar("SELECT price FROM p WHERE id = 7") == "10.5");
  REQUIRE(writer.value()->Exec("COMMIT").ok());
  f.AwaitConverged(*s);
  CHECK(f.Scalar("SELECT price FROM p WHERE id = 7") == "-1");
  CHECK(f.Differences("p", "SELECT id, price FROM widgets") == 0);
}

TEST_CASE("define refuses bad definitions and creates nothing", "[engine][define]") {
  EngineFixture f;
  f.Sql(kWidgets);
  f.Sql("CREATE TABLE keyless (a int, b int); CREATE VIEW wv AS SELECT * FROM widgets;");
  f.Sql("CREATE TABLE taken (x int)");
  auto s = f.OpenSession();
  struct Case {
    const char* statement;
    Code code;
    const char* words;
  };
  const Case cases[] = {
      {"TRANSFORM t FROM nope SELECT a AS b", Code::kNotFound, "nope does not exist"},
      {"TRANSFORM t FROM widgets SELECT pricee AS p", Code::kValidation, "pricee"},
      {"TRANSFORM t FROM keyless SELECT a AS a2", Code::kValidation, "no primary key"},
      {"TRANSFORM t FROM wv SELECT price AS p", Code::kValidation, "not a table"},
      {"TRANSFORM t FROM widgets SELECT random() AS r", Code::kValidation, "volatile"},
      {"TRANSFORM t FROM widgets SELECT price + random() AS r", Code::kValidation, "random()"},
      {"TRANSFORM t FROM widgets SELECT clock_timestamp() AS r", Code::kValidation, "volatile"},
      {"TRANSFORM t FROM widgets SELECT count(*) AS r", Code::kValidation, "aggregate"},
      {"TRANSFORM t FROM widgets SELECT (SELECT 1) AS r", Code::kValidation, "subquer"},
      {"TRANSFORM t FROM widgets SELECT price AS p WHERE random() > 0.5", Code::kValidation,
       "volatile"},
      {"TRANSFORM taken FROM widgets SELECT price AS p", Code::kAlreadyExists, "taken"},
      {"TRANSFORM t FROM widgets SELECT price AS id", Code::kValidation, "key"},
      {"TRANSFORM t FROM widgets SELECT price AS p GROUP BY name", Code::kUnsupported, "GROUP BY"},
      {"TRANSFORM t FROM widgets AS w JOIN keyless AS k ON w.id = k.a SELECT w.price AS p",
       Code::kUnsupported, "JOIN"},
      {"TRANSFORM t FORM widgets SELECT price AS p", Code::kValidation, "position 12"},
  };
  for (const auto& c : cases) {
    INFO(c.statement);
    auto r = s->Apply(c.statement, true);
    REQUIRE(!r.ok());
    CHECK(r.status().code() == c.code);
    CHECK_THAT(r.status().message(), Catch::Contains(c.words));
    CHECK(f.Scalar("SELECT to_regclass('t') IS NULL") == "t");
    CHECK(f.Scalar("SELECT count(*) FROM trellis.transforms") == "0");
    CHECK(f.Scalar("SELECT count(*) FROM trellis.sources") == "0");
    CHECK(f.Scalar("SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'trellis%'") == "0");
  }
  REQUIRE(s->Apply("TRANSFORM t FROM widgets SELECT price AS p", true).ok());
  auto again = s->Apply("TRANSFORM t FROM widgets SELECT price AS p", true);
  CHECK(again.status().code() == Code::kAlreadyExists);
  auto not_define = s->Apply("PAUSE TRANSFORM t", true);
  CHECK(not_define.status().code() == Code::kValidation);
}

TEST_CASE("identifiers are quoted: hostile names stay names", "[engine][define]") {
  EngineFixture f;
  f.Sql(R"sql(CREATE TABLE "Odd ""Table"";--" ("Key" int PRIMARY KEY, "Va""l" text);
              INSERT INTO "Odd ""Table"";--" VALUES (1, 'a'), (2, 'b');)sql");
  auto s = f.OpenSession();
  auto r = s->Apply(
      R"(TRANSFORM "T; DROP TABLE x" FROM "Odd ""Table"";--" AS o SELECT o."Va""l" AS "Out""Col")",
      true);
  INFO((r.ok() ? "" : r.status().ToString()));
  REQUIRE(r.ok());
  auto workers = trellis::BackgroundWorkers::Start(f.Options(), true, 1);
  f.AwaitConverged(*s);
  CHECK(f.Differences(R"("T; DROP TABLE x")", R"(SELECT "Key", "Va""l" FROM "Odd ""Table"";--")") ==
        0);
}

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

TEST_CASE("TRUNCATE of a source empties its targets and writes after it flow",
          "[engine][truncate]") {
  LivePrices live(2);
  auto& f = live.f;
  auto& s = live.s;
  f.Sql("BEGIN; TRUNCATE widgets; INSERT INTO widgets (id, price) VALUES (1, 5), (2, 6); COMMIT;");
  f.AwaitConverged(*s);
  CHECK(f.Differences("a", "SELECT id, price FROM widgets") == 0);
  CHECK(f.Scalar("SELECT count(*) FROM a") == "2");
}

TEST_CASE("statements that change no row are captured and staged harmlessly", "[engine][capture]") {
  LivePrices live(2);
  auto& f = live.f;
  auto& s = live.s;
  // Each writes a capture row with an empty routing array.
  f.Sql("UPDATE widgets SET price = 0 WHERE false");
  f.Sql("DELETE FROM widgets WHERE id < 0");
  f.Sql("INSERT INTO widgets (id, price) SELECT 1, 1 WHERE false");
  f.Sql("UPDATE widgets SET price = price + 1 WHERE id = 7");
  f.AwaitConverged(*s);
  CHECK(f.Scalar("SELECT count(*) FROM trellis.capture") == "0");
  CHECK(f.Differences("a", "SELECT id, price FROM widgets") == 0);
}

TEST_CASE("capture changed outside Trellis pauses its readers; RESUME reinstalls and rebuilds",
          "[engine][capture]") {
  EngineFixture f;
  f.Sql(kWidgets);
  auto s = f.OpenSession();
  REQUIRE(s->Apply("TRANSFORM a FROM widgets SELECT price AS price", true).ok());
  REQUIRE(s->Apply("TRANSFORM b FROM widgets SELECT name AS name", true).ok());
  REQUIRE(s->Apply("PAUSE TRANSFORM b", false).ok());
  {
    auto workers = trellis::BackgroundWorkers::Start(f.Options(), true, 2);
    f.AwaitConverged(*s);
  }
  auto none = s->DetectCaptureDisruptions();
  REQUIRE(none.ok());
  CHECK(none->empty());

  // A loader's way: triggers off for the load, then ENABLE TRIGGER ALL,
  // which leaves them firing in origin sessions only.
  f.Sql("ALTER TABLE widgets DISABLE TRIGGER ALL");
  f.Sql("UPDATE widgets SET price = price + 100 WHERE id <= 50");
  f.Sql("INSERT INTO widgets (id, price) VALUES (9001, 1)");
  f.Sql("ALTER TABLE widgets ENABLE TRIGGER ALL");
  auto found = s->DetectCaptureDisruptions();
  REQUIRE(found.ok());
  CHECK(*found == std::vector<std::string>{"public.widgets"});
  auto a = s->ReadStatus("a");
  REQUIRE(a.ok());
  CHECK(a->status == "paused");
  CHECK(a->paused_kind == "disruption");
  CHECK_THAT(a->paused_reason.value_or(""), Catch::Contains("fires only in origin sessions"));
  CHECK_THAT(a->paused_reason.value_or(""), Catch::Contains("RESUME TRANSFORM a"));
  // b keeps the operator's pause, marked so that its RESUME rebuilds too.
  auto b = s->ReadStatus("b");
  REQUIRE(b.ok());
  CHECK(b->paused_kind == "operator");
  CHECK(f.Scalar("SELECT capture_disrupted FROM trellis.transforms WHERE target_name = 'b'") ==
        "t");
  // Still disrupted on a second look; nothing paused twice.
  auto again = s->DetectCaptureDisruptions();
  REQUIRE(again.ok());
  CHECK(again->size() == 1);

  auto resumed = s->Apply("RESUME TRANSFORM a", false);
  REQUIRE(resumed.ok());
  CHECK(f.Scalar("SELECT count(*) FROM pg_trigger WHERE tgrelid = 'widgets'::regclass "
                 "AND tgname LIKE 'trellis_trellis_capture_%' AND tgenabled = 'A'") == "4");
  auto workers = trellis::BackgroundWorkers::Start(f.Options(), true, 2);
  f.Sql("UPDATE widgets SET price = 7 WHERE id = 9001");  // captured again
  f.AwaitConverged(*s);
  CHECK(f.Differences("a", "SELECT id, price FROM widgets") == 0);
  CHECK(s->ReadStatus("b")->status == "paused");  // b waits for its own RESUME
  REQUIRE(s->Apply("RESUME TRANSFORM b", false).ok());
  f.AwaitConverged(*s);
  CHECK(f.Differences("b", "SELECT id, name FROM widgets") == 0);
  CHECK(f.Scalar("SELECT count(*) FROM trellis.transforms WHERE capture_disrupted") == "0");
}

TEST_CASE("a dropped capture trigger or source table is a disruption", "[engine][capture]") {
  EngineFixture f;
  f.Sql(kWidgets);
  f.Sql("CREATE TABLE gadgets (id int PRIMARY KEY, v int)");
  auto s = f.OpenSession();
  REQUIRE(s->Apply("TRANSFORM a FROM widgets SELECT price AS price", true).ok());
  REQUIRE(s->Apply("TRANSFORM g FROM gadgets SELECT v AS v", true).ok());
  f.Sql("DROP TRIGGER trellis_trellis_capture_delete ON widgets");
  f.Sql("DROP TABLE gadgets");
  auto found = s->DetectCaptureDisruptions();
  REQUIRE(found.ok());
  CHECK(*found == std::vector<std::string>{"public.widgets", "public.gadgets"});
  auto a = s->ReadStatus("a");
  REQUIRE(a.ok());
  CHECK_THAT(a->paused_reason.value_or(""),
             Catch::Contains("trigger trellis_trellis_capture_delete is missing"));
  auto g = s->ReadStatus("g");
  REQUIRE(g.ok());
  CHECK_THAT(g->paused_reason.value_or(""), Catch::Contains("the table no longer exists"));
  // Its RESUME is refused with the fix, and changes nothing.
  auto refused = s->Apply("RESUME TRANSFORM g", false);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().code() == Code::kNotFound);
  CHECK_THAT(refused.status().message(), Catch::Contains("DROP TRANSFORM"));
  CHECK(s->ReadStatus("g")->status == "paused");
}

TEST_CASE("disruptions are found under a catalog schema that needs quoting", "[engine][capture]") {
  EngineFixture f;
  f.Sql(kWidgets);
  auto s = f.OpenSession(true, "Odd Schema-1");
  REQUIRE(s->Apply("TRANSFORM a FROM widgets SELECT price AS price", true).ok());
  auto intact = s->DetectCaptureDisruptions();
  REQUIRE(intact.ok());
  CHECK(intact->empty());
  f.Sql(R"(ALTER TABLE widgets DISABLE TRIGGER "trellis_Odd Schema-1_capture_insert")");
  auto found = s->DetectCaptureDisruptions();
  REQUIRE(found.ok());
  CHECK(*found == std::vector<std::string>{"public.widgets"});
  CHECK_THAT(s->ReadStatus("a")->paused_reason.value_or(""), Catch::Contains("is disabled"));
}

TEST_CASE("the staging worker finds a disruption by itself", "[engine][capture]") {
  LivePrices live(1);
  auto& f = live.f;
  auto& s = live.s;
  f.Sql("ALTER TABLE widgets DISABLE TRIGGER trellis_trellis_capture_update");
  CHECK(AwaitStatus(*s, "a", "paused") == "paused");
  CHECK(s->ReadStatus("a")->paused_kind == "disruption");
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

TEST_CASE("heartbeats tell whether workers are live", "[engine][workers]") {
  EngineFixture f;
  auto s = f.OpenSession();
  CHECK_FALSE(s->HasLiveDrainWorkers().value());
  CHECK_FALSE(s->HasLiveStagingWorker().value());
  {
    auto workers = trellis::BackgroundWorkers::Start(f.Options(), true, 1);
    bool drain = false;
    bool staging = false;
    for (int i = 0; i < 100 && !(drain && staging); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      drain = s->HasLiveDrainWorkers().value();
      staging = s->HasLiveStagingWorker().value();
    }
    CHECK(drain);
    CHECK(staging);
  }
  // A clean stop removes the heartbeat rows.
  CHECK_FALSE(s->HasLiveDrainWorkers().value());
  CHECK_FALSE(s->HasLiveStagingWorker().value());
}

TEST_CASE("a bad watermark token is a validation error", "[engine][convergence]") {
  EngineFixture f;
  auto s = f.OpenSession();
  auto r = s->AwaitConverged("not a snapshot", std::chrono::milliseconds(100));
  REQUIRE(!r.ok());
  CHECK(r.status().code() == Code::kValidation);
}
