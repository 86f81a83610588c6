// Statements sent together in one round trip (pg::Connection::QueryPipelined):
// each one's rows in order, each statement as if sent alone, and the first
// failure ends the pipeline and the transaction as it would have one by one.
#include <catch2/catch.hpp>

#include "engine_fixture.h"
#include "pg/connection.h"

using trellis::test::EngineFixture;
namespace pg = trellis::pg;

TEST_CASE("a pipeline returns each statement's rows in order", "[engine][pipeline]") {
  EngineFixture f;
  f.Sql("CREATE TABLE p (id int PRIMARY KEY)");
  auto conn = pg::Connection::Open(f.url(), "engine_test");
  REQUIRE(conn.ok());
  pg::Connection& c = *conn.value();
  REQUIRE(c.Exec("BEGIN").ok());
  for (int round = 0; round < 2; ++round) {  // the second runs the prepared statements
    auto ran = c.QueryPipelined({{"INSERT INTO p SELECT g FROM generate_series($1::int, $2::int) g",
                                  {std::to_string(round * 10 + 1), std::to_string(round * 10 + 3)}},
                                 {"SELECT count(*), max(id) FROM p", {}},
                                 {"SELECT $1::text || '!'", {"ok"}, /*prepared=*/false}});
    REQUIRE(ran.ok());
    REQUIRE(ran->size() == 3);
    CHECK(ran->at(0).affected == 3);
    // The second sees the first's rows: statements run in order.
    CHECK(ran->at(1).text(0, 0) == std::to_string(3 * (round + 1)));
    CHECK(ran->at(1).text(0, 1) == std::to_string(round * 10 + 3));
    CHECK(ran->at(2).text(0, 0) == "ok!");
  }
  REQUIRE(c.Exec("COMMIT").ok());
  CHECK(f.Scalar("SELECT count(*) FROM p") == "6");
  // Prepared once each, not at every call; the unnamed one not at all.
  auto prepared = c.Query(
      "SELECT count(*) FROM pg_catalog.pg_prepared_statements WHERE statement LIKE "
      "'%generate_series%' OR statement LIKE '%max(id)%' OR statement LIKE '%!%'");
  REQUIRE(prepared.ok());
  CHECK(prepared->text(0, 0) == "2");
}

TEST_CASE("a pipeline's first failure is returned and ends its transaction", "[engine][pipeline]") {
  EngineFixture f;
  f.Sql("CREATE TABLE p (id int PRIMARY KEY); INSERT INTO p VALUES (1)");
  auto conn = pg::Connection::Open(f.url(), "engine_test");
  REQUIRE(conn.ok());
  pg::Connection& c = *conn.value();

  SECTION("in a transaction: the statements after it never run, and it is aborted") {
    REQUIRE(c.Exec("BEGIN").ok());
    auto ran = c.QueryPipelined({{"INSERT INTO p VALUES (2)", {}},
                                 {"INSERT INTO p VALUES (1)", {}},  // a duplicate key
                                 {"SELECT 1/0", {}}});
    REQUIRE_FALSE(ran.ok());
    CHECK(ran.status().sqlstate == std::optional<std::string>("23505"));
    CHECK(c.in_transaction());
    CHECK(c.Exec("SELECT 1").sqlstate == std::optional<std::string>("25P02"));
    REQUIRE(c.Exec("ROLLBACK").ok());
  }
  SECTION("outside one: the statements ran as one implicit transaction, undone whole") {
    auto ran = c.QueryPipelined({{"INSERT INTO p VALUES (2)", {}},
                                 {"INSERT INTO p VALUES (1)", {}},
                                 {"INSERT INTO p VALUES (3)", {}}});
    REQUIRE_FALSE(ran.ok());
    CHECK(ran.status().sqlstate == std::optional<std::string>("23505"));
    CHECK_FALSE(c.in_transaction());
  }
  // The connection is usable after either, and nothing of the pipeline stayed.
  auto after = c.Query("SELECT string_agg(id::text, ',' ORDER BY id) FROM p");
  REQUIRE(after.ok());
  CHECK(after->text(0, 0) == "1");
}
