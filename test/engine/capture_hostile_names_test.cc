// Generated capture SQL under names built to attack it (issue 17 item 2):
// identifiers holding the dollar-quote tag Trellis once used, `$$`, quotes,
// semicolons and a body end that completes a closing tag. Every generated
// body (the four capture functions; no DO block remains) must survive
// define, every kind of write, RESUME's reinstall and drop, which leaves
// no trigger or function behind.
#include <catch2/catch.hpp>

#include "engine_fixture.h"
#include "sql/quote.h"

using trellis::test::EngineFixture;

namespace {

struct Hostile {
  std::string catalog_schema;
  std::string table;  // quoted, in public
  std::string create;
  std::string key_list;  // quoted key columns, for the expected query
  std::string value;     // quoted value column
};

void RunLifecycle(const Hostile& h) {
  EngineFixture f;
  f.Sql(h.create);
  f.Sql("INSERT INTO " + h.table + " SELECT g, g::text, 'v' || g FROM generate_series(1, 50) g");
  auto s = f.OpenSession(true, h.catalog_schema);
  const std::string define =
      "TRANSFORM \"t$trellis$out\" FROM " + h.table + " SELECT " + h.value + " AS \"v$$;'\"\"\"";
  auto defined = s->Apply(define, true);
  INFO(define << " -> " << (defined.ok() ? "" : defined.status().ToString()));
  REQUIRE(defined.ok());
  CHECK(f.Scalar("SELECT count(*) FROM pg_trigger WHERE tgrelid = " +
                 trellis::sql::Literal(h.table) + "::regclass AND tgenabled = 'A'") == "4");
  const std::string target = R"("t$trellis$out")";
  const std::string expected = "SELECT " + h.key_list + ", " + h.value + " FROM " + h.table;
  {
    auto workers = trellis::BackgroundWorkers::Start(f.Options(h.catalog_schema), true, 1);
    f.AwaitConverged(*s);
    f.Sql("INSERT INTO " + h.table + " SELECT g, g::text, 'n' || g FROM generate_series(51, 60) g");
    f.Sql("UPDATE " + h.table + " SET " + h.value + " = 'u' WHERE " + h.value + " LIKE 'v1%'");
    f.Sql("DELETE FROM " + h.table + " WHERE " + h.value + " = 'v7'");
    f.AwaitConverged(*s);
    CHECK(f.Differences(target, expected) == 0);
    f.Sql("TRUNCATE " + h.table);
    f.Sql("INSERT INTO " + h.table + " VALUES (1, '1', 'after')");
    f.AwaitConverged(*s);
    CHECK(f.Differences(target, expected) == 0);
    CHECK(s->DetectCaptureDisruptions()->empty());
  }
  // RESUME after a disruption reinstalls every body.
  f.Sql("ALTER TABLE " + h.table + " DISABLE TRIGGER ALL");
  CHECK(s->DetectCaptureDisruptions()->size() == 1);
  REQUIRE(s->Apply("RESUME TRANSFORM " + target, false).ok());
  CHECK(s->DetectCaptureDisruptions()->empty());

  REQUIRE(s->Apply("PAUSE TRANSFORM " + target, false).ok());
  auto dropped = s->Apply("DROP TRANSFORM " + target, false);
  INFO((dropped.ok() ? "" : dropped.status().ToString()));
  REQUIRE(dropped.ok());
  CHECK(f.Scalar("SELECT count(*) FROM pg_trigger WHERE tgrelid = " +
                 trellis::sql::Literal(h.table) + "::regclass") == "0");
  CHECK(f.Scalar("SELECT count(*) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
                 "WHERE n.nspname = " +
                 trellis::sql::Literal(h.catalog_schema) + " AND p.proname LIKE 'capture%'") ==
        "0");
  CHECK(f.Scalar("SELECT count(*) FROM " + trellis::sql::Ident(h.catalog_schema) + ".sources") ==
        "0");
}

}  // namespace

TEST_CASE("a key column holding $trellis$ is captured and released", "[engine][capture][quoting]") {
  RunLifecycle({"trellis", R"("plain")",
                R"(CREATE TABLE "plain" ("k$trellis$x" int, "k2$trellis" text, "val" text,
                                        PRIMARY KEY ("k$trellis$x", "k2$trellis")))",
                R"("k$trellis$x", "k2$trellis")", R"("val")"});
}

TEST_CASE("a source table holding $trellis$ is captured and released",
          "[engine][capture][quoting]") {
  RunLifecycle({"trellis", R"("t$trellis$y")",
                R"(CREATE TABLE "t$trellis$y" (id int, "k$$" text, "v" text,
                                              PRIMARY KEY (id, "k$$")))",
                R"(id, "k$$")", R"("v")"});
}

TEST_CASE("quotes, semicolons and $$ in every name are captured and released",
          "[engine][capture][quoting]") {
  RunLifecycle({R"(s$trellis$;'")", R"("t'"";$$ DROP TABLE x;--")",
                R"(CREATE TABLE "t'"";$$ DROP TABLE x;--" ("$trellis1$" int, "'"";$trellis$" text,
                    "v$$'" text, PRIMARY KEY ("$trellis1$", "'"";$trellis$")))",
                R"("$trellis1$", "'"";$trellis$")", R"("v$$'")"});
}
