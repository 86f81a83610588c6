// Capture: what the triggers record, and disruptions (capture changed
// outside Trellis) found and repaired.
#include <catch2/catch.hpp>

#include "catalog/states.h"
#include "engine_fixture.h"
#include "widgets.h"

using trellis::Code;
using trellis::test::AwaitStatus;
using trellis::test::EngineFixture;
using trellis::test::kWidgets;
using trellis::test::LivePrices;

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

TEST_CASE("a disruption under a transform compiled into stages names and counts the user's",
          "[engine][capture]") {
  EngineFixture f;
  f.Sql(kWidgets);
  auto s = f.OpenSession();
  // The subquery's hidden grouping reads widgets, and so does the user's
  // transform: two catalog rows, one transform the user knows.
  REQUIRE(s->Apply("TRANSFORM pricey FROM widgets w SELECT w.name AS name "
                   "WHERE w.price > (SELECT avg(v.price) FROM widgets v)",
                   true)
              .ok());
  {
    auto workers = trellis::BackgroundWorkers::Start(f.Options(), true, 2);
    f.AwaitConverged(*s);
  }
  REQUIRE(f.Scalar("SELECT count(*) FROM trellis.transform_inputs i JOIN trellis.sources src "
                   "ON src.id = i.source_id WHERE src.table_name = 'widgets'") == "2");
  f.Sql("DROP TRIGGER trellis_trellis_capture_delete ON widgets");
  const int source =
      std::stoi(f.Scalar("SELECT id FROM trellis.sources WHERE table_name = 'widgets'"));
  auto marked = trellis::catalog::MarkCaptureDisrupted(f.conn(), "trellis", source,
                                                       "public.widgets", "a trigger is missing");
  REQUIRE(marked.ok());
  CHECK(marked.value() == std::vector<std::string>{"pricey"});
  auto st = s->ReadStatus("pricey");
  REQUIRE(st.ok());
  CHECK(st->status == "paused");
  CHECK_THAT(st->paused_reason.value_or(""), Catch::Contains("RESUME TRANSFORM pricey"));
  CHECK_THAT(st->paused_reason.value_or(""), !Catch::Contains("__trellis_"));
}
