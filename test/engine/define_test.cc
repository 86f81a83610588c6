// DEFINE: what define accepts, what it refuses (creating nothing), and how
// it quotes the names it is given.
#include <catch2/catch.hpp>

#include "engine_fixture.h"
#include "widgets.h"

using trellis::Code;
using trellis::test::EngineFixture;
using trellis::test::kWidgets;

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
