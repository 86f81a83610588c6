// fan_out_join_bench: joins whose rows repeat under the FROM row (issue 25,
// bench/README.md "Joins of every shape"), end to end through the engine's
// workers, on one throwaway cluster: 1M orders, 10k customers (100 orders
// each). Two transforms of the same one-to-many join, one after the other
// (the first is dropped before the second is defined, so no write is
// maintained twice):
//
//   inner   FROM customers c JOIN orders o ON o.customer_id = c.id: the root
//           is orders (nothing repeats under an order), the target is keyed
//           by the order, and a customer change reaches its 100 orders as
//           100 units.
//   left    FROM customers c LEFT JOIN orders o ...: the root is customers,
//           the target is keyed (c.id, o.id), and any change recomputes the
//           customer's 100 rows as one unit, an order change included.
//
// For each, join_sections.h's fan-out (a customer rename against a
// projection's UPDATE of the same 100 rows) and churn against REFRESH
// MATERIALIZED VIEW of the same query (0.1% of the orders and of the
// customers updated per round; 1% too for inner; every round checked equal
// to the view).
//
//   fan_out_join_bench [--rows N]   (N orders, default 1,000,000; N/100 customers)
#include <algorithm>
#include <iostream>
#include <string>
#include <vector>

#include "bench_db.h"
#include "join_sections.h"

namespace trellis::bench {
namespace {

constexpr long kOrdersPerCustomer = 100;

struct Shape {
  const char* target;
  const char* join;  // "JOIN" or "LEFT JOIN"
  std::vector<double> fractions;
};

void Measure(BenchDb& db, const Shape& shape, long rows) {
  const long customers = std::max(1L, rows / kOrdersPerCustomer);
  const std::string from =
      std::string(" FROM customers c ") + shape.join + " orders o ON o.customer_id = c.id";
  db.Apply(std::string("TRANSFORM ") + shape.target + from + " SELECT c.name, o.amount");
  const auto built = Clock::now();
  db.AwaitConverged(1800000);
  std::cerr << shape.target << " built in " << Since(built) << " s\n";
  FanOut(db, shape.target, "name", customers, kOrdersPerCustomer);
  ChurnCase c;
  c.title = std::string(shape.target) + ": `customers c " + shape.join +
            " orders o` vs REFRESH MATERIALIZED VIEW, " + std::to_string(rows) + " orders";
  c.target = shape.target;
  c.compared = "name, amount";
  c.query = "SELECT c.name, o.amount" + from;
  c.tables = "orders, customers";
  c.writes = [&db, rows, customers](double fraction, int round) {
    const long o = UpdateRandomOrders(db, rows, fraction, round);
    const long k = UpdateFirstRows(db, "customers", "name = name || '+'", customers, fraction);
    return std::to_string(o) + "/" + std::to_string(k);
  };
  ChurnVsRefresh(db, c, shape.fractions);
  // DROP asks for a paused transform.
  db.Apply(std::string("PAUSE TRANSFORM ") + shape.target);
  db.Apply(std::string("DROP TRANSFORM ") + shape.target);
}

void Run(const test::ThrowawayCluster& cluster, long rows) {
  BenchDb db(cluster, "fan_out_join_bench");
  LogSlowStatements(db);
  std::cerr << "loading " << rows << " orders\n";
  CreateJoinTables(db, "", rows, kOrdersPerCustomer);
  auto workers = db.StartWorkers();
  DefineItemProjection(db);
  Measure(db, Shape{"inner_rows", "JOIN", {0.001, 0.01}}, rows);
  Measure(db, Shape{"left_rows", "LEFT JOIN", {0.001}}, rows);
}

}  // namespace
}  // namespace trellis::bench

int main(int argc, char** argv) {
  return trellis::bench::JoinBenchMain(argc, argv, trellis::bench::Run);
}
