// group_bench: the group plan's maintenance statements
// (engine/src/plan/aggregates) against REFRESH MATERIALIZED VIEW, on 1M
// source rows in 10k groups (sum, count, avg, max by one int column), after
// N random-row UPDATEs (0.01%, 0.1%, 1%, 10% of the rows).
//
// What it times, per N, in one run (machines are shared: read the ratios):
//   refresh    REFRESH MATERIALIZED VIEW of the definition's query;
//   deltas     folding the N updates' change rows into per-group deltas and
//              applying them (FoldChangesSql + ApplyDeltasSql, one transaction);
//   recompute  recomputing the dirty groups from the source
//              (RecomputeGroupsSql, by an index on the group column).
// It does NOT time capture, staging or the drain's transactions: the group
// plan is not wired to the workers yet, so this is the cost of the SQL a
// drain would run, not an end-to-end convergence time. Change rows are made
// by the benchmark from the rows before and after the UPDATE, as capture
// would. Each target is checked equal to the view after every step.
//   group_bench [--rows N]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "bench_db.h"
#include "plan/aggregates/group_sql.h"
#include "sql/quote.h"

namespace trellis::bench {
namespace {

using plan::aggregates::AggregateInput;
using plan::aggregates::GroupShape;

constexpr const char* kQuery =
    "SELECT customer_id, sum(amount) AS total, count(*) AS n, avg(amount) AS mean, "
    "max(amount) AS top FROM orders o GROUP BY customer_id";

GroupShape Shape(const std::string& target) {
  using F = grammar::AggregateFunction;
  auto input = [](F f, std::string column, int i) {
    return AggregateInput{
        grammar::AggregateCall{
            f, f == F::kCount ? std::nullopt : std::optional<std::string>("o.amount")},
        column,
        "__trellis_" + std::to_string(i) + "_",
        "o.amount",
        "__trellis_ch.a",
        true,
        {}};
  };
  GroupShape shape;
  shape.target = sql::Ident(target);
  shape.source = "orders";
  shape.alias = "o";
  shape.keys = {{"customer_id", "o.customer_id", /*nullable=*/false}};
  shape.aggregates = {input(F::kSum, "total", 1), input(F::kCount, "n", 2),
                      input(F::kAvg, "mean", 3), input(F::kMax, "top", 4)};
  return shape;
}

void CreateTarget(BenchDb& db, const std::string& target) {
  std::vector<std::string> items = {"o.customer_id"};
  for (const auto& c : plan::aggregates::StateColumns(Shape(target))) {
    items.push_back(c.Recompute() + " AS " + sql::Ident(c.name));
  }
  db.Sql("CREATE TABLE " + target + " AS SELECT " + sql::Join(items, ", ") +
         " FROM orders o GROUP BY o.customer_id");
  db.Sql("CREATE UNIQUE INDEX ON " + target + " (customer_id) NULLS NOT DISTINCT");
  db.Sql("VACUUM ANALYZE " + target);
}

long Differences(BenchDb& db, const std::string& target) {
  const std::string visible = "SELECT customer_id, total, n, mean, top FROM " + target;
  return std::stol(db.Scalar("SELECT count(*) FROM ((" + visible +
                             " EXCEPT ALL TABLE mv) "
                             "UNION ALL (TABLE mv EXCEPT ALL " +
                             visible + ")) d"));
}

int Run(long rows) {
  test::ThrowawayCluster cluster(TRELLIS_TESTKIT_BINARY);
  BenchDb db(cluster, "group_bench");
  // Short maintenance statements gain nothing from JIT and a correlated
  // subquery's cost estimate turns it on: 2.4 s of compiling for a 1 s
  // statement, measured. Workers must run with jit off too.
  db.Sql("SET jit = off");
  std::cerr << "loading " << rows << " rows\n";
  db.Sql("CREATE TABLE orders (id bigint PRIMARY KEY, customer_id int NOT NULL, amount int)");
  db.Sql(
      "INSERT INTO orders SELECT g, g % 10000, abs(hashint4(g)) % 1000 FROM generate_series(1, " +
      std::to_string(rows) + ") g");
  db.Sql("CREATE INDEX ON orders (customer_id)");
  db.Sql("VACUUM ANALYZE orders");
  db.Sql(std::string("CREATE MATERIALIZED VIEW mv AS ") + kQuery);
  CreateTarget(db, "delta_totals");
  CreateTarget(db, "recomputed_totals");
  db.Sql("CREATE TABLE changes (sign int, customer_id int, a int)");

  std::printf(
      "| updated rows | refresh s | deltas s | recompute s | refresh / deltas | "
      "refresh / recompute |\n|---|---|---|---|---|---|\n");
  for (double fraction : {0.0001, 0.001, 0.01, 0.1}) {
    const long n = static_cast<long>(rows * fraction);
    std::cerr << "N = " << n << "\n";
    db.Sql("TRUNCATE changes");
    db.Sql("CREATE TEMP TABLE picked AS SELECT id FROM orders TABLESAMPLE BERNOULLI (" +
           std::to_string(fraction * 100 * 1.2) + ") LIMIT " + std::to_string(n));
    // What capture would see: the old versions, the UPDATE, the new ones.
    db.Sql(
        "INSERT INTO changes SELECT -1, o.customer_id, o.amount FROM orders o JOIN picked "
        "USING (id)");
    db.Sql(
        "UPDATE orders o SET amount = abs(hashint4(o.amount + o.id::int)) % 1000 FROM picked "
        "p WHERE o.id = p.id");
    db.Sql(
        "INSERT INTO changes SELECT 1, o.customer_id, o.amount FROM orders o JOIN picked "
        "USING (id)");
    db.Sql("DROP TABLE picked");
    db.Sql("VACUUM ANALYZE orders, changes");

    const double refresh = db.TimeSql("REFRESH MATERIALIZED VIEW mv");

    std::string script = "BEGIN; CREATE TEMP TABLE deltas ON COMMIT DROP AS " +
                         plan::aggregates::FoldChangesSql(Shape("delta_totals"), "changes") +
                         "; ANALYZE deltas";
    for (const auto& statement :
         plan::aggregates::ApplyDeltasSql(Shape("delta_totals"), "deltas")) {
      script += "; " + statement;
    }
    const double deltas = db.TimeSql(script + "; COMMIT");

    const double recompute = db.TimeSql(
        "BEGIN; CREATE TEMP TABLE dirty ON COMMIT DROP AS SELECT DISTINCT customer_id AS "
        "__trellis_key_1 FROM changes; ANALYZE dirty; " +
        plan::aggregates::RecomputeGroupsSql(Shape("recomputed_totals"), "dirty") + "; COMMIT");

    const long wrong = Differences(db, "delta_totals") + Differences(db, "recomputed_totals");
    if (wrong != 0) {
      std::cerr << "targets differ from the view: " << wrong << " rows\n";
      return 1;
    }
    std::printf("| %ld | %.3f | %.4f | %.4f | %.1fx | %.1fx |\n", n, refresh, deltas, recompute,
                refresh / deltas, refresh / recompute);
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace
}  // namespace trellis::bench

int main(int argc, char** argv) {
  long rows = 1000000;
  if (argc == 3 && std::string(argv[1]) == "--rows") rows = std::atol(argv[2]);
  try {
    return trellis::bench::Run(rows);
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
}
