// A GROUP BY or FULL JOIN target is rebuilt in one statement (plan/
// group_plan.h, plan/full_join_plan.h). When a row fails in it, the rebuild
// is cut into its units (groups, join values) and narrowed as a drain's
// batch is (drain/range_unit.h): the failing unit is charged again, every
// other is written, and the rebuild's job ends. Before, it waited for
// retries whole, and `await_converged` gave up.
#include <catch2/catch.hpp>

#include "engine_fixture.h"
#include "pipeline_steps.h"

using trellis::test::EngineFixture;

namespace {

constexpr const char* kStock = R"sql(
CREATE TABLE stock (id int PRIMARY KEY, g int NOT NULL, qty int NOT NULL);
INSERT INTO stock SELECT i, i % 10, 1 + i % 7 FROM generate_series(1, 500) i;
)sql";

// The target's visible columns (it holds hidden state too).
constexpr const char* kTarget = "SELECT g, n, per FROM per_group";

// The target's query, with NULL where a group's `per` cannot be computed
// (the quarantined cell).
constexpr const char* kExpected =
    "SELECT g, count(*), CASE WHEN bool_and(qty <> 0) THEN sum(100 / nullif(qty, 0)) END "
    "FROM stock GROUP BY g";

// The state and pause kind of the target's column `name`.
std::string ColumnState(trellis::Session& s, const std::string& name) {
  auto st = s.ReadStatus("per_group");
  REQUIRE(st.ok());
  for (const auto& column : st->columns) {
    if (column.name == name) return column.state + " " + column.paused_kind.value_or("");
  }
  FAIL("no column " + name);
  return "";
}

}  // namespace

TEST_CASE("a group rebuild that fails for one group charges it and writes every other",
          "[drain][failure][rebuild_by_units]") {
  EngineFixture f;
  f.Sql(kStock);
  auto s = f.OpenSession();
  REQUIRE(s->Apply("TRANSFORM per_group FROM stock SELECT g AS g, count(*) AS n, "
                   "sum(100 / qty) AS per GROUP BY g",
                   true)
              .ok());
  auto workers = trellis::BackgroundWorkers::Start(f.Options(), true, 2);
  f.AwaitConverged(*s);

  // The column paused, a row of group 3 made to fail and group 5 changed:
  // only RESUME's column rebuild brings `per` up to date.
  REQUIRE(s->Apply("PAUSE TRANSFORM per_group.per", false).ok());
  f.Sql("UPDATE stock SET qty = 0 WHERE id = 13");
  f.Sql("UPDATE stock SET qty = qty + 1 WHERE g = 5");
  f.AwaitConverged(*s);
  REQUIRE(s->Apply("RESUME TRANSFORM per_group.per", false).ok());
  f.AwaitConverged(*s);  // the rebuild's job ends: nothing waits for a retry
  CHECK(ColumnState(*s, "per") == "paused quarantine");
  CHECK(f.Scalar("SELECT string_agg(column_name || ' ' || key::text || ' ' || sqlstate, ',') "
                 "FROM trellis.quarantined_rows") == "per {3} 22012");
  CHECK(f.Scalar("SELECT count(*) FROM trellis.jobs") == "0");
  CHECK(trellis::test::SelectDifferences(f, kTarget, kExpected) == 0);

  // A whole rebuild (request_backfill) clears the records and charges
  // again what fails now: group 4 too. Its writes drained first, so the
  // rebuild itself meets the failing rows.
  f.Sql("UPDATE stock SET qty = 0 WHERE id = 14");
  f.Sql("UPDATE stock SET qty = qty + 2 WHERE g IN (6, 7)");
  f.Sql("DELETE FROM stock WHERE g = 9");
  f.AwaitConverged(*s);
  REQUIRE(s->RequestBackfill("per_group").ok());
  f.AwaitConverged(*s);
  CHECK(f.Scalar("SELECT string_agg(key::text, ',' ORDER BY key::text) "
                 "FROM trellis.quarantined_rows") == "{3},{4}");
  CHECK(f.Scalar("SELECT count(*) FROM trellis.jobs") == "0");
  CHECK(trellis::test::SelectDifferences(f, kTarget, kExpected) == 0);

  // Fixed by writes, the groups heal and the column is live.
  f.Sql("UPDATE stock SET qty = 1 WHERE id IN (13, 14)");
  f.AwaitConverged(*s);
  CHECK(ColumnState(*s, "per") == "live ");
  CHECK(trellis::test::SelectDifferences(f, kTarget, kExpected) == 0);
}

TEST_CASE("a FULL JOIN rebuild that fails for one join value charges it and writes every other",
          "[drain][failure][rebuild_by_units]") {
  EngineFixture f;
  f.Sql(
      "CREATE TABLE customers (id int PRIMARY KEY, d int NOT NULL); "
      "CREATE TABLE orders (id int PRIMARY KEY, customer_id int, qty int NOT NULL); "
      "INSERT INTO customers SELECT g, 1 + g % 7 FROM generate_series(1, 50) g; "
      "INSERT INTO orders SELECT g, g % 60, 1 + g % 5 FROM generate_series(1, 300) g;");
  auto s = f.OpenSession();
  REQUIRE(s->Apply("TRANSFORM pairs FROM customers c FULL JOIN orders o ON o.customer_id = c.id "
                   "SELECT c.d AS d, o.qty AS qty, 100 / (o.qty * c.d) AS per",
                   true)
              .ok());
  auto workers = trellis::BackgroundWorkers::Start(f.Options(), true, 2);
  f.AwaitConverged(*s);

  // The column paused, then customer 7's orders made to fail and others
  // changed: only RESUME's column rebuild brings `per` up to date.
  REQUIRE(s->Apply("PAUSE TRANSFORM pairs.per", false).ok());
  f.Sql("UPDATE orders SET qty = 0 WHERE customer_id = 7");
  f.Sql("UPDATE orders SET qty = qty + 1 WHERE customer_id BETWEEN 20 AND 30");
  f.Sql("UPDATE customers SET d = d + 1 WHERE id > 40");
  f.Sql("DELETE FROM customers WHERE id = 3");
  f.AwaitConverged(*s);
  REQUIRE(s->Apply("RESUME TRANSFORM pairs.per", false).ok());
  f.AwaitConverged(*s);
  CHECK(f.Scalar("SELECT string_agg(DISTINCT column_name || ' ' || key::text || ' ' || sqlstate, "
                 "',') FROM trellis.quarantined_rows") == "per {7} 22012");
  CHECK(f.Scalar("SELECT count(*) FROM trellis.jobs") == "0");
  CHECK(trellis::test::SelectDifferences(
            f, "SELECT d, qty, per FROM pairs",
            "SELECT c.d, o.qty, CASE WHEN o.customer_id IS DISTINCT FROM 7 "
            "THEN 100 / (o.qty * c.d) END "
            "FROM customers c FULL JOIN orders o ON o.customer_id = c.id") == 0);
}
