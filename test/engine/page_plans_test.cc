// Page statements run on a plan made once per session (drain/page_unit.cc):
// their only parameter is a list of page ids, which tells the planner
// nothing, and planning a grouping's delta statement cost more than running
// it for a small batch (bench/README.md, "Page statements planned once").
#include <catch2/catch.hpp>

#include "build_steps.h"
#include "engine_fixture.h"
#include "pipeline_steps.h"

namespace trellis::test {
namespace {

constexpr const char* kSales = R"sql(
CREATE TABLE sales (id bigint PRIMARY KEY, g int NOT NULL, amount numeric(12,2));
INSERT INTO sales SELECT i, i % 50, (i % 17) * 1.25 FROM generate_series(1, 1000) i;
)sql";
constexpr const char* kTotals =
    "TRANSFORM sale_totals FROM sales SELECT g, count(*) AS n, sum(amount) AS total GROUP BY g";

}  // namespace

TEST_CASE("a drain session plans a transform's page statement once, whatever the pages",
          "[engine][drain][deltas][page_plans]") {
  EngineFixture f;
  auto s = DefineBuilt(f, kSales, kTotals);
  auto conn = ConnectBuilder(f);
  KeepOffRebuilds(f);
  for (int round = 1; round <= 4; ++round) {
    f.Sql("UPDATE sales SET amount = amount + " + std::to_string(round) +
          " WHERE id % 7 = " + std::to_string(round));
    StageAndDrain(*conn);
  }
  // The grouping's delta statement, prepared on the drain's session: every
  // execution ran the one generic plan, none a plan made for its pages.
  auto plans = conn->Query(
      "SELECT sum(generic_plans), sum(custom_plans) FROM pg_catalog.pg_prepared_statements "
      "WHERE statement LIKE '%trellis_deltas AS MATERIALIZED%'");
  REQUIRE(plans.ok());
  CHECK(plans->text(0, 0) == "4");
  CHECK(plans->text(0, 1) == "0");
  // The setting is the unit's own: the session's is as it was.
  auto mode = conn->Query("SHOW plan_cache_mode");
  REQUIRE(mode.ok());
  CHECK(mode->text(0, 0) == "auto");
  CHECK(SelectDifferences(f, "SELECT g, n, total FROM sale_totals",
                          "SELECT g, count(*), sum(amount) FROM sales GROUP BY g") == 0);
}

}  // namespace trellis::test
