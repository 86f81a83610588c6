// Sums and avgs over bigint and numeric arguments kept by deltas, exactly
// (spec/engine.md "Deltas", "Exact sums"): define records each argument's
// type, the plan keeps bigint and numeric sums by deltas and floats by
// recompute, and a numeric sum shows the display scale a fresh sum() shows
// while its running sum keeps every digit a delta added.
#include <catch2/catch.hpp>

#include "build_steps.h"
#include "catalog/model.h"
#include "engine_fixture.h"
#include "pipeline_steps.h"
#include "plan/bind.h"
#include "plan/group_plan.h"
#include "trellis/workers.h"

namespace trellis::test {
namespace {

constexpr const char* kLedger = R"sql(
CREATE TABLE ledger (id bigint PRIMARY KEY, g int, big bigint, price numeric,
                     amount numeric(12,2), w float8);
INSERT INTO ledger SELECT i, i % 3, i * 1000, i, i, i FROM generate_series(1, 30) i;
)sql";
constexpr const char* kSums =
    "TRANSFORM sums FROM ledger SELECT g, sum(big) AS big_sum, avg(big) AS big_avg, "
    "sum(price) AS price_sum, avg(price) AS price_avg, sum(amount) AS amount_sum, "
    "avg(amount) AS amount_avg, sum(w) AS w_sum GROUP BY g";
constexpr const char* kSumsQuery =
    "SELECT g, sum(big), avg(big), sum(price), avg(price), sum(amount), avg(amount), sum(w) "
    "FROM ledger GROUP BY g";

// Rows whose text differs between the target and the query: the text shows
// a numeric's display scale, which numeric equality ignores (1.5 = 1.50).
long TextDifferences(EngineFixture& f) {
  const std::string target =
      "SELECT (g, big_sum, big_avg, price_sum, price_avg, amount_sum, amount_avg, w_sum)::text "
      "FROM sums";
  const std::string query = std::string("SELECT q::text FROM (") + kSumsQuery + ") q";
  return std::stol(f.Scalar("SELECT count(*) FROM ((" + target + " EXCEPT ALL " + query +
                            ") UNION ALL (" + query + " EXCEPT ALL " + target + ")) d"));
}

// The drain statements of `sums` as its plan is bound now.
std::string ApplySql(pg::Connection& conn, bool* delta_ready) {
  auto t = catalog::LoadTransform(conn, "trellis", "sums");
  REQUIRE(t.ok());
  auto plan = plan::Bind(t.value(), "trellis");
  REQUIRE(plan.ok());
  *delta_ready = static_cast<const plan::GroupPlan&>(*plan.value()).delta_ready();
  std::string out;
  for (const auto& s : plan.value()->ApplyPagesSql()) out += s.sql + "\n";
  return out;
}

// A built, live `sums` with no worker running.
std::unique_ptr<Session> Built(EngineFixture& f) {
  auto s = DefineBuilt(f, kLedger, kSums);
  REQUIRE(TextDifferences(f) == 0);
  return s;
}

}  // namespace

TEST_CASE("sums over bigint and numeric are kept by deltas to the digit, floats recomputed",
          "[engine][group][deltas]") {
  EngineFixture f;
  auto s = Built(f);
  auto conn = ConnectBuilder(f);
  // The batches below must go by deltas (the scale check says so): on a
  // loaded machine the chooser measured a first delta batch at seconds and
  // took the next by a rebuild.
  KeepOffRebuilds(f);
  CHECK(f.Scalar("SELECT string_agg(name || ':' || argument_type, ',' ORDER BY ordinal) "
                 "FROM trellis.transform_columns WHERE argument_type IS NOT NULL") ==
        "big_sum:bigint,big_avg:bigint,price_sum:numeric,price_avg:numeric,"
        "amount_sum:numeric(12,2),amount_avg:numeric(12,2),w_sum:double precision");
  bool ready = false;
  const std::string apply = ApplySql(*conn, &ready);
  CHECK(ready);
  // The float sum takes the value the applying statement recomputes; the
  // others are computed from their running sums.
  CHECK_THAT(apply, Catch::Contains("\"w_sum\" = __trellis_x.\"w_sum\""));
  for (const char* kept : {"big_sum", "big_avg", "price_sum", "price_avg", "amount_sum"}) {
    INFO(kept);
    CHECK_THAT(apply, !Catch::Contains("\"" + std::string(kept) + "\" = __trellis_x."));
  }

  // Group 1 gets a value of scale 3, near the limits of bigint, NaN-free.
  f.Sql(
      "INSERT INTO ledger VALUES (100, 1, 9223372036854775807, 2.125, 0.5, 0.5), "
      "(101, 1, 9223372036854775806, 1.50, 0.25, 0.25)");
  StageAndDrain(*conn);
  CHECK(TextDifferences(f) == 0);
  // The scale-3 value goes: a fresh sum shows scale 2 again (1.50 stays).
  const std::string delta_rows_before = f.Scalar("SELECT count(*) FROM trellis.delta_rows");
  f.Sql("DELETE FROM ledger WHERE id = 100");
  StageStep(*conn);
  CHECK(f.Scalar("SELECT count(*) FROM trellis.delta_rows") != delta_rows_before);
  StageAndDrain(*conn);
  CHECK(TextDifferences(f) == 0);
  // Applied by a delta, not a recompute: the running sum kept the scale
  // the deleted value brought (a recompute would have dropped it).
  CHECK(f.Scalar("SELECT pg_catalog.scale(__trellis_4_sum) FROM sums WHERE g = 1") == "3");
  CHECK(f.Scalar("SELECT pg_catalog.scale(price_sum) FROM sums WHERE g = 1") == "2");

  // NaN and an infinity have no delta that takes them back: their group
  // is recomputed while it holds one, and deltas resume after.
  f.Sql("INSERT INTO ledger VALUES (102, 2, 1, 'NaN', 1, 1), (103, 0, 1, 'Infinity', 1, 1)");
  StageAndDrain(*conn);
  CHECK(TextDifferences(f) == 0);
  f.Sql("DELETE FROM ledger WHERE id IN (102, 103)");
  f.Sql("UPDATE ledger SET price = price + 0.001, big = big - 5 WHERE g = 2");
  StageAndDrain(*conn);
  CHECK(TextDifferences(f) == 0);
}

TEST_CASE("a sum defined before its argument type was recorded stays as it was kept",
          "[engine][group][deltas]") {
  EngineFixture f;
  auto s = Built(f);
  auto conn = ConnectBuilder(f);
  // A catalog migrated to step 11 has no argument types for existing
  // columns, and their numeric sums have no counts per scale.
  f.Sql("UPDATE trellis.transform_columns SET argument_type = NULL");
  const std::string drops = f.Scalar(
      "SELECT string_agg('DROP COLUMN ' || quote_ident(name), ', ') "
      "FROM trellis.transform_columns WHERE name LIKE '%\\_scales'");
  REQUIRE(drops.find("scales") != std::string::npos);
  f.Sql("ALTER TABLE sums " + drops);
  f.Sql("DELETE FROM trellis.transform_columns WHERE name LIKE '%\\_scales'");
  bool ready = false;
  const std::string apply = ApplySql(*conn, &ready);
  CHECK(ready);
  // Its bigint and numeric sums are recomputed per changed group, as
  // before step 11 (their running sums are numeric).
  for (const char* recomputed : {"big_sum", "price_sum", "amount_avg", "w_sum"}) {
    INFO(recomputed);
    CHECK_THAT(apply, Catch::Contains("\"" + std::string(recomputed) + "\" = __trellis_x."));
  }
  f.Sql("INSERT INTO ledger VALUES (100, 1, 9223372036854775807, 2.125, 0.5, 0.5)");
  f.Sql("DELETE FROM ledger WHERE id = 100");
  f.Sql("UPDATE ledger SET price = price * 1.5 WHERE g = 0");
  StageAndDrain(*conn);
  CHECK(TextDifferences(f) == 0);

  // ALTER COLUMN records the type and makes the state: deltas from then on.
  REQUIRE(s->Apply("ALTER TRANSFORM sums ALTER COLUMN price_sum AS sum(price)", false).ok());
  CHECK(f.Scalar("SELECT argument_type FROM trellis.transform_columns WHERE name = "
                 "'price_sum'") == "numeric");
  {
    auto workers = BackgroundWorkers::Start(f.Options(), true, 1);
    f.AwaitConverged(*s);
  }
  const std::string altered = ApplySql(*conn, &ready);
  CHECK(ready);
  CHECK_THAT(altered, !Catch::Contains("\"price_sum\" = __trellis_x."));
  CHECK_THAT(altered, Catch::Contains("\"big_sum\" = __trellis_x."));
  f.Sql("UPDATE ledger SET price = price + 0.125 WHERE g = 2");
  StageAndDrain(*conn);
  CHECK(TextDifferences(f) == 0);
}

TEST_CASE("ALTER ADD COLUMN routes a new column and stays on the delta path, exactly once",
          "[engine][group][deltas]") {
  EngineFixture f;
  auto s = DefineBuilt(f, kLedger,
                       "TRANSFORM sums FROM ledger SELECT g, count(*) AS n, sum(big) AS big_sum "
                       "GROUP BY g");
  auto conn = ConnectBuilder(f);
  const std::string routed =
      "SELECT i.routed_columns::text || i.routes_values FROM trellis.transform_inputs i";
  CHECK(f.Scalar(routed) == "{g,big}true");
  // Staged before the ALTER: delta rows without price (folded rows of the
  // plan before it, of its width). Captured before it:
  // capture rows without price.
  f.Sql("UPDATE ledger SET price = price + 0.5, big = big + 1 WHERE g = 1");
  StageStep(*conn);
  // Folded (one writer, two signs), of 4 folded columns: n, big_sum's
  // running sum and count, the row count.
  CHECK(f.Scalar("SELECT count(*) FROM trellis.delta_rows") == "2");
  f.Sql("INSERT INTO ledger VALUES (100, 2, 5, 1.25, 1, 1)");
  REQUIRE(s->Apply("ALTER TRANSFORM sums ADD COLUMN sum(price) AS price_sum", false).ok());
  CHECK(f.Scalar(routed) == "{g,big,price}true");
  f.Sql("DELETE FROM ledger WHERE id = 3");  // captured with price
  // The ALTER's rebuild runs first, so the page staged before it is drained
  // by the plan that takes deltas again: its delta rows without price are
  // not applied as deltas (their groups are recomputed), and the capture
  // rows without price stage nothing; the rebuild counted both.
  while (BuildStep(*conn)) {
  }
  bool ready = false;
  ApplySql(*conn, &ready);
  CHECK(ready);
  CHECK(f.Scalar("SELECT count(*) FROM trellis.delta_rows WHERE cardinality(row_values) = 4") ==
        "2");
  // The page's drain statements run as they are (a delta row rebuilt with
  // names it has no values for would fail, and the drain would fall back
  // to narrowing the page into recomputes).
  {
    auto t = catalog::LoadTransform(*conn, "trellis", "sums");
    REQUIRE(t.ok());
    auto plan = plan::Bind(t.value(), "trellis");
    REQUIRE(plan.ok());
    const std::string pages = f.Scalar("SELECT array_agg(id)::text FROM trellis.pages");
    REQUIRE(conn->Exec("BEGIN").ok());
    for (const auto& statement : plan.value()->ApplyPagesSql()) {
      auto applied = conn->Query(statement.sql, {pages});
      INFO((applied.ok() ? std::string() : applied.status().ToString()));
      CHECK(applied.ok());
      if (!applied.ok()) break;
    }
    REQUIRE(conn->Exec("ROLLBACK").ok());
  }
  DrainAllPages(*conn);
  StageStep(*conn);
  DrainAllPages(*conn);
  {
    auto workers = BackgroundWorkers::Start(f.Options(), true, 1);
    f.AwaitConverged(*s);
  }
  const std::string query =
      "SELECT q::text FROM (SELECT g, count(*), sum(big), sum(price) FROM ledger GROUP BY g) q";
  const std::string target = "SELECT (g, n, big_sum, price_sum)::text FROM sums";
  CHECK(f.Scalar("SELECT count(*) FROM ((" + target + " EXCEPT ALL " + query + ") UNION ALL (" +
                 query + " EXCEPT ALL " + target + ")) d") == "0");
  // Later writes travel as delta rows with every routed value.
  f.Sql("UPDATE ledger SET price = price * 2 WHERE g = 0");
  StageStep(*conn);
  // (folded: 7 columns now, price_sum's running sum, count and scales added)
  CHECK(f.Scalar("SELECT min(cardinality(row_values)) FROM trellis.delta_rows") == "7");
  DrainAllPages(*conn);
  CHECK(f.Scalar("SELECT count(*) FROM ((" + target + " EXCEPT ALL " + query + ") UNION ALL (" +
                 query + " EXCEPT ALL " + target + ")) d") == "0");
}

}  // namespace trellis::test
