// A recompute asks the user's WHERE only of the rows it is about
// (plan/projection_plan.cc, kRecomputeRange). SQL leaves the order of a
// WHERE's conditions to the planner: a WHERE that fails on a row of
// another range (a division by zero) must not fail this one, or the
// failure is charged to a key that does not fail (held or quarantined
// wrongly). Plans are forced to the shape that met it: a generic plan
// whose anti-join reads the whole source.
#include <catch2/catch.hpp>

#include "build_steps.h"
#include "catalog/model.h"
#include "engine_fixture.h"
#include "pipeline_steps.h"
#include "plan/bind.h"

namespace trellis::test {

TEST_CASE("a range's recompute asks the WHERE only of the range's rows", "[engine][charging]") {
  EngineFixture f;
  auto s = DefineBuilt(f,
                       "CREATE TABLE items (id int PRIMARY KEY, d int NOT NULL); INSERT INTO items "
                       "SELECT g, g % 7 FROM generate_series(1, 2000) g;",
                       "TRANSFORM kept FROM items SELECT d AS d WHERE 10 / (d + 1) IS NOT NULL");
  // Row 1500 now fails the WHERE; rows 1 and 2 do not.
  f.Sql("UPDATE items SET d = -1 WHERE id = 1500");
  auto conn = ConnectBuilder(f);
  REQUIRE(conn->Exec("SET plan_cache_mode = force_generic_plan").ok());
  REQUIRE(conn->Exec("SET enable_nestloop = off").ok());
  REQUIRE(conn->Exec("SET enable_indexscan = off").ok());
  REQUIRE(conn->Exec("SET enable_bitmapscan = off").ok());
  auto t = catalog::LoadTransformById(*conn, "trellis", 1);
  REQUIRE(t.ok());
  auto plan = plan::Bind(t.value(), "trellis");
  REQUIRE(plan.ok());
  for (const auto& range : {plan::KeyRange{std::nullopt, "{2}"}, plan::KeyRange{"{1}", "{3}"}}) {
    const plan::Bound recompute = plan.value()->RecomputeRange(range, std::nullopt);
    auto applied = conn->QueryPrepared(recompute.text, recompute.params);
    INFO(range.lo.value_or("start") << " .. " << range.hi.value_or("end"));
    CHECK(applied.ok());
    if (!applied.ok()) UNSCOPED_INFO(applied.status().ToString());
  }
  // The failing row's own range still fails, as it must.
  const plan::Bound own =
      plan.value()->RecomputeRange(plan::KeyRange{"{1499}", "{1500}"}, std::nullopt);
  auto failed = conn->QueryPrepared(own.text, own.params);
  CHECK_FALSE(failed.ok());
}

TEST_CASE("a FULL JOIN's range recompute asks the WHERE only of the range's rows",
          "[engine][charging]") {
  EngineFixture f;
  auto s = DefineBuilt(
      f,
      "CREATE TABLE customers (id int PRIMARY KEY, d int NOT NULL); CREATE TABLE orders (id int "
      "PRIMARY KEY, customer_id int); INSERT INTO customers SELECT g, g % 7 FROM "
      "generate_series(1, 500) g; INSERT INTO orders SELECT g, g % 600 FROM generate_series(1, "
      "2000) g;",
      "TRANSFORM pairs FROM customers c FULL JOIN orders o ON o.customer_id = c.id SELECT c.d AS "
      "d, o.id AS order_id WHERE coalesce(10 / (c.d + 1), 0) IS NOT NULL");
  // Customer 400's rows now fail the WHERE; those of customers 1 and 2 do not.
  f.Sql("UPDATE customers SET d = -1 WHERE id = 400");
  auto conn = ConnectBuilder(f);
  REQUIRE(conn->Exec("SET plan_cache_mode = force_generic_plan").ok());
  auto t = catalog::LoadTransformById(*conn, "trellis", 1);
  REQUIRE(t.ok());
  auto plan = plan::Bind(t.value(), "trellis");
  REQUIRE(plan.ok());
  const plan::Bound recompute =
      plan.value()->RecomputeRange(plan::KeyRange{std::nullopt, "{2}"}, std::nullopt);
  auto applied = conn->QueryPrepared(recompute.text, recompute.params);
  INFO((applied.ok() ? "" : applied.status().ToString()));
  CHECK(applied.ok());
  const plan::Bound own =
      plan.value()->RecomputeRange(plan::KeyRange{"{399}", "{400}"}, std::nullopt);
  CHECK_FALSE(conn->QueryPrepared(own.text, own.params).ok());
}

}  // namespace trellis::test
