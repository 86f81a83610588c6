// DEFINE: what define accepts, what it refuses (creating nothing), and how
// it quotes the names it is given.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <thread>

#include "engine_fixture.h"
#include "widgets.h"

using trellis::Code;
using trellis::test::EngineFixture;
using trellis::test::kWidgets;
using trellis::test::LivePrices;

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
      // An expression over aggregates compiles into stages, but not one
      // that reads a column outside its aggregates without grouping by it.
      {"TRANSFORM t FROM widgets SELECT price + count(*) AS r", Code::kValidation,
       "must appear in the GROUP BY clause"},
      // A subquery in a SELECT item is refused by the grammar, at its
      // position (subquery_stages_test.cc has the message).
      {"TRANSFORM t FROM widgets SELECT (SELECT 1) AS r", Code::kUnsupported, "position 32"},
      {"TRANSFORM t FROM widgets SELECT ((id, id) < (1, (SELECT 1))) IS NOT NULL AS b",
       Code::kUnsupported, "a subquery in a SELECT item"},
      {"TRANSFORM t FROM widgets SELECT price AS p WHERE random() > 0.5", Code::kValidation,
       "volatile"},
      {"TRANSFORM taken FROM widgets SELECT price AS p", Code::kAlreadyExists, "taken"},
      {"TRANSFORM t FROM widgets SELECT price AS id", Code::kValidation, "key"},
      {"TRANSFORM t FROM widgets SELECT price AS p GROUP BY name", Code::kValidation, "GROUP BY"},
      {"TRANSFORM t FROM widgets AS w JOIN keyless AS k ON w.id = k.a SELECT w.price AS p",
       Code::kValidation, "add a primary key to public.keyless"},
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

TEST_CASE("define refuses a volatile function wherever the expressions call it",
          "[engine][define]") {
  // The check reads the functions out of the query tree PostgreSQL stores
  // for the expressions: calls hidden behind an operator, a cast or deep
  // nesting count as much as a direct call.
  EngineFixture f;
  f.Sql(kWidgets);
  f.Sql(R"sql(
CREATE FUNCTION vol_add(int, int) RETURNS int LANGUAGE sql VOLATILE AS 'SELECT $1 + $2';
CREATE OPERATOR #+# (LEFTARG = int, RIGHTARG = int, FUNCTION = vol_add);
CREATE FUNCTION vol_eq(int, int) RETURNS boolean LANGUAGE sql VOLATILE AS 'SELECT $1 = $2';
CREATE OPERATOR #=# (LEFTARG = int, RIGHTARG = int, FUNCTION = vol_eq);
CREATE TYPE tag AS (v int);
CREATE FUNCTION vol_tag(int) RETURNS tag LANGUAGE sql VOLATILE AS 'SELECT ROW($1)::tag';
CREATE CAST (int AS tag) WITH FUNCTION vol_tag(int);
CREATE FUNCTION calm_add(int, int) RETURNS int LANGUAGE sql STABLE AS 'SELECT $1 + $2';
CREATE OPERATOR #~# (LEFTARG = int, RIGHTARG = int, FUNCTION = calm_add);
)sql");
  auto s = f.OpenSession();
  struct Case {
    const char* statement;
    const char* function;
  };
  const Case refused[] = {
      {"TRANSFORM t FROM widgets SELECT id::int #+# 1 AS r", "vol_add(integer,integer)"},
      {"TRANSFORM t FROM widgets SELECT price AS p WHERE id::int #=# 3", "vol_eq(integer,integer)"},
      {"TRANSFORM t FROM widgets SELECT price AS p WHERE id::int #=# ANY (ARRAY[1, 2])",
       "vol_eq(integer,integer)"},
      {"TRANSFORM t FROM widgets SELECT price AS p WHERE id IS DISTINCT FROM (id::int #+# 0)",
       "vol_add(integer,integer)"},
      {"TRANSFORM t FROM widgets SELECT id::int::tag AS r", "vol_tag(integer)"},
      {"TRANSFORM t FROM widgets SELECT CAST(id::int AS tag) AS r", "vol_tag(integer)"},
      {"TRANSFORM t FROM widgets SELECT coalesce(abs(length(name) * "
       "(CASE WHEN id > 1 THEN ARRAY[1, (random() * 10)::int] END)[2]), 0) AS r",
       "random()"},
      {"TRANSFORM t FROM widgets SELECT nullif(id, abs(id::int #+# 1)) AS r",
       "vol_add(integer,integer)"},
      {"TRANSFORM t FROM widgets SELECT gen_random_uuid() AS u, clock_timestamp() AS c",
       "clock_timestamp(), gen_random_uuid()"},
  };
  f.Sql("CREATE SEQUENCE s");
  for (const auto& c : refused) {
    INFO(c.statement);
    auto r = s->Apply(c.statement, true);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == Code::kValidation);
    CHECK_THAT(r.status().message(), Catch::Contains(c.function));
    CHECK(f.Scalar("SELECT to_regclass('t') IS NULL") == "t");
  }
  // Stable and immutable calls, through operators and casts too, are kept.
  REQUIRE(s->Apply("TRANSFORM t FROM widgets SELECT id::int #~# 1 AS r, id::text::int AS i, "
                   "now() AS n WHERE (id, id) < (100, 100)",
                   true)
              .ok());
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

TEST_CASE("define refuses a partition or an inheritance child as a source", "[engine][define]") {
  EngineFixture f;
  f.Sql(R"sql(
CREATE TABLE events (id int, day date, v int, PRIMARY KEY (id, day)) PARTITION BY RANGE (day);
CREATE TABLE events_2024 PARTITION OF events FOR VALUES FROM ('2024-01-01') TO ('2025-01-01');
CREATE TABLE animals (id int PRIMARY KEY, name text);
CREATE TABLE dogs (bark text) INHERITS (animals);
ALTER TABLE dogs ADD PRIMARY KEY (id);
)sql");
  auto s = f.OpenSession();
  struct Case {
    const char* statement;
    const char* words;
  };
  const Case cases[] = {
      {"TRANSFORM t FROM events_2024 SELECT v AS v", "is a partition"},
      {"TRANSFORM t FROM dogs SELECT bark AS b", "inheritance child"},
  };
  for (const auto& c : cases) {
    INFO(c.statement);
    auto r = s->Apply(c.statement, true);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == Code::kValidation);
    CHECK_THAT(r.status().message(), Catch::Contains(c.words));
    CHECK(f.Scalar("SELECT to_regclass('t') IS NULL") == "t");
    CHECK(f.Scalar("SELECT count(*) FROM trellis.transforms") == "0");
    CHECK(f.Scalar("SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'trellis%'") == "0");
  }
}

TEST_CASE("a define over an empty source is live when it returns", "[engine][define]") {
  EngineFixture f;
  f.Sql("CREATE TABLE fresh (id int PRIMARY KEY, v int)");
  f.Sql(kWidgets);
  auto s = f.OpenSession();
  // No workers at all: the build happens inside define.
  REQUIRE(s->Apply("TRANSFORM e FROM fresh SELECT v * 2 AS v2", true).ok());
  auto st = s->ReadStatus("e");
  REQUIRE(st.ok());
  CHECK(st->status == "live");
  CHECK(st->backfill.rows_total == 0);
  CHECK(f.Scalar("SELECT count(*) FROM pg_constraint WHERE conrelid = 'e'::regclass "
                 "AND contype = 'p'") == "1");
  // A source with rows is built by the workers, as before.
  REQUIRE(s->Apply("TRANSFORM w FROM widgets SELECT price AS p", true).ok());
  CHECK(s->ReadStatus("w")->status == "waiting_to_backfill");
  // Writes after the define flow like any other.
  auto workers = trellis::BackgroundWorkers::Start(f.Options(), true, 1);
  f.Sql("INSERT INTO fresh SELECT g, g FROM generate_series(1, 50) g");
  f.AwaitConverged(*s);
  CHECK(f.Differences("e", "SELECT id, v * 2 FROM fresh") == 0);
  CHECK(f.Differences("w", "SELECT id, price FROM widgets") == 0);
}

TEST_CASE("a define waiting on a locked source holds no catalog lock", "[engine][define]") {
  LivePrices live(1);
  auto& f = live.f;
  auto& s = live.s;
  f.Sql("CREATE TABLE gadgets (id int PRIMARY KEY, v int); INSERT INTO gadgets VALUES (1, 1)");
  // A long transaction that wrote to the source: installing capture waits
  // for it.
  auto holder = trellis::pg::Connection::Open(f.url(), "lock_holder");
  REQUIRE(holder.ok());
  REQUIRE(holder.value()->Exec("BEGIN").ok());
  REQUIRE(holder.value()->Exec("UPDATE gadgets SET v = 2").ok());

  auto definer = f.OpenSession();
  std::atomic<bool> defined{false};
  trellis::Status define_status;
  std::thread define([&] {
    auto r = definer->Apply("TRANSFORM g FROM gadgets SELECT v AS v", true);
    define_status = r.ok() ? trellis::Status::OK() : r.status();
    defined = true;
  });
  // Wait until the define is blocked on the source.
  bool waiting = false;
  for (int i = 0; i < 200 && !waiting; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    waiting = f.Scalar(
                  "SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation "
                  "WHERE NOT l.granted AND c.relname = 'gadgets'") != "0";
  }
  CHECK(waiting);
  CHECK_FALSE(defined.load());
  // Meanwhile an unrelated transform stays fresh: its writes arrive, and
  // every catalog update the workers make goes through.
  // (Polled, not awaited: a failure here must still reach the COMMIT below.)
  auto arrives = [&](const std::string& price) {
    for (int i = 0; i < 500; ++i) {
      if (f.Scalar("SELECT price FROM a WHERE id = 1") == price) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  };
  for (int round = 0; round < 3; ++round) {
    const std::string price = std::to_string(1000 + round);
    f.Sql("UPDATE widgets SET price = " + price + " WHERE id = 1");
    CHECK(arrives(price));
  }
  CHECK_FALSE(defined.load());
  REQUIRE(holder.value()->Exec("COMMIT").ok());
  define.join();
  CHECK(define_status.ok());
  f.AwaitConverged(*s);
  CHECK(f.Differences("g", "SELECT id, v FROM gadgets") == 0);
}
