// fillfactor_bench: a GROUP BY target's fillfactor (issue 27, item 3), 90
// (what the engine makes, plan/group_plan.h kTargetFillfactor) against
// 100, in one run on one transform: `TRANSFORM by_customer FROM orders
// SELECT customer_id, count(*), sum(amount), avg(amount) GROUP BY
// customer_id` over 1M orders in 10k groups.
//
// Before each leg the target is set to the leg's fillfactor and rewritten
// (VACUUM FULL: compact, each page filled to it, as a build leaves it), then
// N random orders get a new amount in one statement, and the time from its
// commit to convergence is measured, with the target's updates and HOT
// updates as the server counts them. Legs alternate which goes first;
// medians over the rounds. The target must equal its query after every leg.
//
//   fillfactor_bench [--rows N]   (default 1,000,000 orders)
#include <algorithm>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "bench_db.h"
#include "join_sections.h"
#include "stats.h"

namespace trellis::bench {
namespace {

constexpr int kRounds = 5;

constexpr const char* kDifferences =
    "SELECT count(*) FROM ((SELECT customer_id, n, total, mean FROM by_customer EXCEPT ALL "
    "SELECT customer_id, count(*), sum(amount), avg(amount) FROM orders GROUP BY customer_id) "
    "UNION ALL (SELECT customer_id, count(*), sum(amount), avg(amount) FROM orders GROUP BY "
    "customer_id EXCEPT ALL SELECT customer_id, n, total, mean FROM by_customer)) d";

struct Leg {
  std::vector<double> converged;
  std::vector<double> hot_share;
};

// The target's (updates, HOT updates) as the server counts them, once the
// workers' counts are flushed (at most once a second while they run).
std::pair<long, long> Updates(BenchDb& db) {
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  db.Sql("SELECT pg_stat_clear_snapshot()");
  const std::string both = db.Scalar(
      "SELECT pg_stat_get_tuples_updated('by_customer'::regclass) || ' ' || "
      "pg_stat_get_tuples_hot_updated('by_customer'::regclass)");
  const auto space = both.find(' ');
  return {std::stol(both.substr(0, space)), std::stol(both.substr(space + 1))};
}

void RunLeg(BenchDb& db, int fillfactor, long rows, long changed, long seed, Leg& leg) {
  db.Sql("ALTER TABLE by_customer SET (fillfactor = " + std::to_string(fillfactor) + ")");
  db.Sql("VACUUM FULL by_customer");  // VACUUM runs alone, outside a transaction
  db.Sql("VACUUM ANALYZE by_customer, orders");
  const auto before = Updates(db);
  db.Sql(
      "UPDATE orders SET amount = amount + 1 WHERE id IN (SELECT DISTINCT 1 + "
      "abs(hashint8(g * 31 + " +
      std::to_string(seed) + ")) % " + std::to_string(rows) + " FROM generate_series(1, " +
      std::to_string(changed) + ") g)");
  const auto committed = Clock::now();
  db.AwaitConverged(600000);
  leg.converged.push_back(Since(committed));
  const auto after = Updates(db);
  const long updated = after.first - before.first;
  const long hot = after.second - before.second;
  leg.hot_share.push_back(updated > 0 ? static_cast<double>(hot) / updated : 0.0);
  const std::string wrong = db.Scalar(kDifferences);
  if (wrong != "0") throw BenchError("by_customer differs from its query: " + wrong + " rows");
}

void Run(const test::ThrowawayCluster& cluster, long rows) {
  BenchDb db(cluster, "fillfactor_bench");
  const std::string n = std::to_string(rows);
  db.Sql(
      "CREATE TABLE orders (id bigint PRIMARY KEY, customer_id int NOT NULL, amount "
      "numeric(12, 2) NOT NULL)");
  db.Sql("INSERT INTO orders SELECT g, 1 + g % " + std::to_string(std::max(1L, rows / 100)) +
         ", (g % 997) / 10.0 FROM generate_series(1, " + n + ") g");
  db.Sql("CREATE INDEX ON orders (customer_id)");
  db.Sql("VACUUM ANALYZE orders");
  auto workers = db.StartWorkers();
  db.Apply(
      "TRANSFORM by_customer FROM orders SELECT customer_id, count(*) AS n, sum(amount) AS "
      "total, avg(amount) AS mean GROUP BY customer_id");
  db.AwaitConverged(1800000);
  std::printf(
      "\n### GROUP BY target fillfactor 90 vs 100, %ld orders in %ld groups (%d rounds, "
      "medians)\n\n"
      "| orders changed | ff 90: converged s | ff 100: converged s | 100 / 90 | HOT share 90 | "
      "HOT share 100 |\n|---|---|---|---|---|---|\n",
      rows, std::max(1L, rows / 100), kRounds);
  std::fflush(stdout);
  long seed = 0;
  for (double fraction : {0.001, 0.01}) {
    const long changed = static_cast<long>(rows * fraction + 0.5);
    Leg ninety, hundred;
    for (int round = 0; round < kRounds; ++round) {
      if (round % 2 == 0) {
        RunLeg(db, 90, rows, changed, ++seed, ninety);
        RunLeg(db, 100, rows, changed, ++seed, hundred);
      } else {
        RunLeg(db, 100, rows, changed, ++seed, hundred);
        RunLeg(db, 90, rows, changed, ++seed, ninety);
      }
    }
    const double a = Median(ninety.converged);
    const double b = Median(hundred.converged);
    std::printf("| %ld (%.1f%%) | %.3f | %.3f | %.2fx | %.0f%% | %.0f%% |\n", changed,
                fraction * 100, a, b, b / a, Median(ninety.hot_share) * 100,
                Median(hundred.hot_share) * 100);
    std::fflush(stdout);
  }
  std::printf("\nEvery leg: the target equal to its query (0 differences).\n");
}

}  // namespace
}  // namespace trellis::bench

int main(int argc, char** argv) {
  return trellis::bench::JoinBenchMain(argc, argv, trellis::bench::Run);
}
