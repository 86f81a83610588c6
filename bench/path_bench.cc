// path_bench: the batch paths and their chooser (issue 27; spec/engine.md
// "Batch paths"), in one run on one transform: `TRANSFORM by_customer FROM
// orders SELECT customer_id, count(*), sum(amount), avg(amount) GROUP BY
// customer_id` over N orders in N/100 groups, staging and 2 drain threads
// running throughout. For each level (0.01%, 0.1%, 1%, 10%, 100% of the
// orders given a new amount in one committed UPDATE), the time from the
// commit until the target converged, the path of the last batch (status's
// last_batch), and REFRESH MATERIALIZED VIEW of the same query; then a
// COPY of N new orders, and a TRUNCATE followed by a reload of the N
// orders (each against REFRESH). The target must equal its query after
// every leg. Ratios in one run; no timed asserts.
//
//   path_bench [--rows N]   (default 1,000,000 orders)
#include <cstdio>
#include <string>

#include "bench_db.h"
#include "join_sections.h"
#include "stats.h"

namespace trellis::bench {
namespace {

constexpr int kCapMs = 1800000;

constexpr const char* kDifferences =
    "SELECT count(*) FROM ((SELECT customer_id, n, total, mean FROM by_customer EXCEPT ALL "
    "TABLE mv) UNION ALL (TABLE mv EXCEPT ALL SELECT customer_id, n, total, mean FROM "
    "by_customer)) d";

void Check(BenchDb& db, const std::string& leg) {
  db.Sql("REFRESH MATERIALIZED VIEW mv");
  const std::string wrong = db.Scalar(kDifferences);
  if (wrong != "0") throw BenchError("by_customer differs from its query after " + leg);
}

std::string LastPath(BenchDb& db) {
  const TransformStatus s = db.ReadStatus("by_customer");
  if (!s.last_batch) return "-";
  return s.last_batch->path;
}

// One leg: `write` committed, then time to converged, the last path, and
// a REFRESH of the view in the same state.
void Leg(BenchDb& db, const std::string& name, const std::string& write) {
  const double wrote = db.TimeSql(write);
  const auto committed = Clock::now();
  db.AwaitConverged(kCapMs);
  const double converged = Since(committed);
  const std::string path = LastPath(db);
  const double refresh = db.TimeSql("REFRESH MATERIALIZED VIEW mv");
  const std::string wrong = db.Scalar(kDifferences);
  if (wrong != "0") throw BenchError("by_customer differs from its query after " + name);
  std::printf("| %s | %.3f | %.3f | %s | %.3f | %.2fx |\n", name.c_str(), wrote, converged,
              path.c_str(), refresh, refresh / converged);
  std::fflush(stdout);
}

void Run(const test::ThrowawayCluster& cluster, long rows) {
  BenchDb db(cluster, "path_bench");
  const std::string n = std::to_string(rows);
  const std::string groups = std::to_string(std::max(1L, rows / 100));
  db.Sql(
      "CREATE TABLE orders (id bigint PRIMARY KEY, customer_id int NOT NULL, amount "
      "numeric(12, 2) NOT NULL)");
  db.Sql("INSERT INTO orders SELECT g, 1 + g % " + groups + ", (g % 997) / 10.0 FROM " +
         "generate_series(1, " + n + ") g");
  db.Sql("CREATE INDEX ON orders (customer_id)");
  db.Sql("VACUUM ANALYZE orders");
  const std::string select =
      "SELECT customer_id, count(*) AS n, sum(amount) AS total, avg(amount) AS mean FROM orders";
  db.Sql("CREATE MATERIALIZED VIEW mv AS " + select + " GROUP BY customer_id");
  auto workers = db.StartWorkers();
  db.Apply(
      "TRANSFORM by_customer FROM orders SELECT customer_id, count(*) AS n, sum(amount) AS "
      "total, avg(amount) AS mean GROUP BY customer_id");
  db.AwaitConverged(kCapMs);
  Check(db, "the first build");
  std::printf(
      "\n### Batch paths: GROUP BY over %ld orders in %s groups (one run)\n\n"
      "| write | write s | converged s (after commit) | last batch's path | REFRESH s | "
      "REFRESH / converged |\n|---|---|---|---|---|---|\n",
      rows, groups.c_str());
  std::fflush(stdout);
  long seed = 0;
  for (double fraction : {0.0001, 0.001, 0.01, 0.1, 1.0}) {
    const long changed = static_cast<long>(rows * fraction + 0.5);
    db.Sql("VACUUM ANALYZE orders, by_customer");
    const std::string pick =
        fraction >= 1.0
            ? "true"
            : "id IN (SELECT DISTINCT 1 + abs(hashint8(g * 31 + " + std::to_string(++seed) +
                  ")) % " + n + " FROM generate_series(1, " + std::to_string(changed) + ") g)";
    char name[64];
    std::snprintf(name, sizeof name, "UPDATE %ld (%g%%)", changed, fraction * 100);
    Leg(db, name, "UPDATE orders SET amount = amount + 1 WHERE " + pick);
  }
  db.Sql("VACUUM ANALYZE orders, by_customer");
  Leg(db, "COPY " + n + " new orders",
      "COPY orders FROM PROGRAM 'seq " + std::to_string(rows + 1) + " " + std::to_string(2 * rows) +
          " | awk ''{print $1\",\"1+$1%" + groups + "\",\"($1%997)/10}''' WITH (FORMAT csv)");
  db.Sql("VACUUM ANALYZE orders, by_customer");
  Leg(db, "TRUNCATE + reload of " + n,
      "BEGIN; TRUNCATE orders; INSERT INTO orders SELECT g, 1 + g % " + groups +
          ", (g % 997) / 10.0 FROM generate_series(1, " + n + ") g; COMMIT");
  std::printf("\nEvery leg: the target equal to its query (0 differences).\n");
}

}  // namespace
}  // namespace trellis::bench

int main(int argc, char** argv) {
  return trellis::bench::JoinBenchMain(argc, argv, trellis::bench::Run);
}
