// Routing layouts (capture/routing.h): capture rows are read by their own
// width, so a routing column appended for a later reader never makes
// anyone misread the capture rows written before it.
#include <catch2/catch.hpp>

#include "capture/routing.h"
#include "capture/sources.h"
#include "engine_fixture.h"
#include "pg/connection.h"
#include "sql/quote.h"

using trellis::capture::RoutingRows;
using trellis::test::EngineFixture;

namespace {

// Capture-like rows of widths 1, 2 and 3 read through RoutingRows at
// `positions`: each row version's values as "a|b", in order.
std::string ReadMixed(EngineFixture& f, const std::vector<size_t>& positions) {
  std::vector<std::string> cs;
  for (size_t i = 1; i <= positions.size(); ++i) cs.push_back("k.c" + std::to_string(i));
  return f.Scalar(
      "WITH s AS (SELECT id, routing, array_length(routing, 2) AS width FROM (VALUES "
      "(1, ARRAY[ARRAY['1'], ARRAY['2']]), "
      "(2, ARRAY[ARRAY['3', 'x3'], ARRAY['4', 'x4'], ARRAY['5', 'x5']]), "
      "(3, ARRAY[ARRAY['6', 'x6', 'y6']])) AS v(id, routing)) "
      "SELECT string_agg(concat_ws('|', " +
      trellis::sql::Join(cs, ", ") + "), ',' ORDER BY s.id, " + cs[0] + ") FROM s, " +
      RoutingRows("s", positions, "k"));
}

}  // namespace

TEST_CASE("capture rows are read by their own width", "[engine][capture][routing]") {
  EngineFixture f;
  // The key alone: every row, however wide, gives its first value.
  CHECK(ReadMixed(f, {1}) == "1,2,3,4,5,6");
  // The key and the second column: rows too narrow to carry it are skipped.
  CHECK(ReadMixed(f, {1, 2}) == "3|x3,4|x4,5|x5,6|x6");
  CHECK(ReadMixed(f, {3, 1}) == "y6|6");
}

TEST_CASE("appending a routing column keeps earlier capture rows readable",
          "[engine][capture][routing]") {
  EngineFixture f;
  f.Sql(
      "CREATE TABLE widgets (id int, sub text, grp int, price int, PRIMARY KEY (id, sub));"
      "INSERT INTO widgets SELECT g, 's' || g, g % 3, g FROM generate_series(1, 100) g;");
  auto s = f.OpenSession();
  REQUIRE(s->Apply("TRANSFORM a FROM widgets SELECT price AS price", true).ok());
  {
    auto workers = trellis::BackgroundWorkers::Start(f.Options(), true, 1);
    f.AwaitConverged(*s);
  }
  // Queued while no staging worker runs: capture rows two values wide.
  f.Sql("UPDATE widgets SET price = price + 1000 WHERE id <= 40");
  f.Sql("DELETE FROM widgets WHERE id > 90");
  // A later reader (a GROUP BY over grp, say) appends grp to the layout.
  auto conn = trellis::pg::Connection::Open(f.url(), "capture_routing_test");
  REQUIRE(conn.ok());
  {
    auto tx = trellis::pg::Transaction::Begin(*conn.value());
    REQUIRE(tx.ok());
    auto table = trellis::capture::ResolveTable(*conn.value(), {std::nullopt, "widgets"});
    REQUIRE(table.ok());
    auto source = trellis::capture::EnsureSource(*conn.value(), "trellis", table.value());
    REQUIRE(source.ok());
    auto positions =
        trellis::capture::EnsureRoutingColumns(*conn.value(), "trellis", source.value(), {"grp"});
    REQUIRE(positions.ok());
    CHECK(*positions == std::vector<size_t>{3});
    auto again = trellis::capture::EnsureRoutingColumns(*conn.value(), "trellis", source.value(),
                                                        {"id", "grp"});
    REQUIRE(again.ok());
    CHECK(*again == std::vector<size_t>{1, 3});
    REQUIRE(tx.value()->Commit().ok());
  }
  CHECK(f.Scalar("SELECT routing_columns FROM trellis.sources") == "{id,sub,grp}");
  // Written now: three values wide, queued behind the two-wide rows.
  f.Sql("UPDATE widgets SET price = -price WHERE id BETWEEN 30 AND 60");
  f.Sql("INSERT INTO widgets VALUES (500, 's500', 1, 5)");
  CHECK(f.Scalar("SELECT string_agg(DISTINCT array_length(routing, 2)::text, ',') FROM "
                 "trellis.capture") == "2,3");
  auto workers = trellis::BackgroundWorkers::Start(f.Options(), true, 1);
  f.AwaitConverged(*s);
  CHECK(f.Differences("a", "SELECT id, sub, price FROM widgets") == 0);
  CHECK(s->DetectCaptureDisruptions()->empty());
}
