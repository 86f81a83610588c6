#include "join_sections.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "stats.h"

namespace trellis::bench {

int JoinBenchMain(int argc, char** argv,
                  const std::function<void(const test::ThrowawayCluster&, long rows)>& run) {
  long rows = 1000000;
  if (argc == 3 && std::string(argv[1]) == "--rows") rows = std::atol(argv[2]);
  try {
    test::ThrowawayCluster cluster(TRELLIS_TESTKIT_BINARY);
    PrintLoad("at start");
    run(cluster, rows);
    PrintLoad("at end");
    return 0;
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
}

double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

void PrintLoad(const char* when) {
  std::FILE* f = std::fopen("/proc/loadavg", "r");
  char text[128] = {0};
  if (f != nullptr) {
    if (std::fgets(text, sizeof text, f) == nullptr) text[0] = 0;
    std::fclose(f);
  }
  std::printf("\nload average %s: %s", when, text);
}

void LogSlowStatements(BenchDb& db) {
  if (std::getenv("JOIN_BENCH_LOG_MS") == nullptr) return;
  db.Sql(std::string("ALTER SYSTEM SET log_min_duration_statement = ") +
         std::getenv("JOIN_BENCH_LOG_MS"));
  db.Scalar("SELECT pg_reload_conf()");
}

void CreateJoinTables(BenchDb& db, const std::string& suffix, long rows, long per_customer) {
  const std::string customers = std::to_string(std::max(1L, rows / per_customer));
  db.Sql("CREATE TABLE regions" + suffix + " (id int PRIMARY KEY, label text, vat numeric)");
  db.Sql("INSERT INTO regions" + suffix +
         " SELECT g, 'region ' || g, 1 + (g % 20) / 100.0 FROM generate_series(1, 100) g");
  db.Sql("CREATE TABLE customers" + suffix + " (id int PRIMARY KEY, name text, region_id int)");
  db.Sql("INSERT INTO customers" + suffix + " SELECT g, 'customer ' || g, 1 + g % 100 " +
         "FROM generate_series(1, " + customers + ") g");
  db.Sql("CREATE TABLE orders" + suffix +
         " (id bigint PRIMARY KEY, customer_id int, amount numeric, note text)");
  db.Sql("INSERT INTO orders" + suffix + " SELECT g, 1 + g % " + customers +
         ", g % 997, 'order ' || g FROM generate_series(1, " + std::to_string(rows) + ") g");
  db.Sql("CREATE INDEX ON orders" + suffix + " (customer_id)");
  db.Sql("CREATE INDEX ON customers" + suffix + " (region_id)");
  db.Sql("VACUUM ANALYZE orders" + suffix + ", customers" + suffix + ", regions" + suffix);
}

void DefineItemProjection(BenchDb& db) {
  db.Sql("CREATE TABLE items AS TABLE orders");
  db.Sql("ALTER TABLE items ADD PRIMARY KEY (id)");
  db.Sql("CREATE INDEX ON items (customer_id)");
  db.Sql("VACUUM ANALYZE items");
  db.Apply("TRANSFORM item_rows FROM items i SELECT i.amount * 2 AS twice, i.note");
  db.AwaitConverged(1800000);
}

void FanOut(BenchDb& db, const std::string& target, const std::string& name_column, long customers,
            long per_customer) {
  // Statistics first, as the churn rounds take them: a target just built has
  // none until autovacuum gets to it, and a plan made without them can read
  // the whole target for one customer.
  db.Sql("VACUUM ANALYZE customers, items, " + target);
  std::vector<double> join, projection;
  for (int round = 0; round < 7; ++round) {
    const std::string k = std::to_string(1 + (round * 37) % customers);
    auto customer = [&] {
      const auto start = Clock::now();
      db.Sql("UPDATE customers SET name = name || '.' WHERE id = " + k);
      db.AwaitConverged(600000);
      join.push_back(Since(start));
    };
    auto items = [&] {
      const auto start = Clock::now();
      db.Sql("UPDATE items SET amount = amount + 1 WHERE customer_id = " + k);
      db.AwaitConverged(600000);
      projection.push_back(Since(start));
    };
    if (round % 2 == 0) {
      customer();
      items();
    } else {
      items();
      customer();
    }
    const std::string reached =
        db.Scalar("SELECT count(*) FROM " + target + " j JOIN customers c ON c.name = j." +
                  name_column + " WHERE c.id = " + k);
    if (reached != std::to_string(per_customer)) {
      throw BenchError("customer " + k + "'s rename reached " + reached + " rows of " + target);
    }
  }
  std::printf(
      "\n### Fan-out (%s): 1 customer read by %ld orders vs a projection update of %ld rows\n\n"
      "| rounds | customer update -> converged (median s) | projection update -> converged "
      "(median s) | ratio |\n|---|---|---|---|\n| %zu | %.3f | %.3f | %.2fx |\n",
      target.c_str(), per_customer, per_customer, join.size(), Median(join), Median(projection),
      Median(join) / Median(projection));
  std::fflush(stdout);
}

long UpdateRandomOrders(BenchDb& db, long rows, double fraction, int round) {
  const long o = static_cast<long>(rows * fraction + 0.5);
  db.Sql("UPDATE orders SET amount = amount + 1 WHERE id IN (SELECT (1 + abs(hashint8(g * " +
         std::to_string(static_cast<long>(fraction * 1e6)) + " + " +
         std::to_string(round * 1000003L) + ")) % " + std::to_string(rows) +
         ") FROM generate_series(1, " + std::to_string(o) + ") g)");
  return o;
}

long UpdateFirstRows(BenchDb& db, const std::string& table, const std::string& set, long count,
                     double fraction) {
  const long n = static_cast<long>(count * fraction + 0.5);
  db.Sql("UPDATE " + table + " SET " + set + " WHERE id <= " + std::to_string(n));
  return n;
}

// Rounds per churn level: one sample at 0.1% churn falls in one of two
// groups (both writes staged in one batch, or in two), so the figure is the
// median of several, with every round's ratio printed beside it.
constexpr int kChurnRounds = 5;

void ChurnVsRefresh(BenchDb& db, const ChurnCase& c, const std::vector<double>& fractions) {
  const std::string view = c.target + "_view";
  db.Sql("CREATE MATERIALIZED VIEW " + view + " AS " + c.query);
  std::string updated = c.tables;
  for (size_t at; (at = updated.find(", ")) != std::string::npos;) updated.replace(at, 2, "/");
  std::printf(
      "\n### %s (%d rounds, medians)\n\n"
      "| churn | rows updated (%s) | the writes s | trellis: last commit -> "
      "converged s | REFRESH s | REFRESH / trellis | per round |\n|---|---|---|---|---|---|---|\n",
      c.title.c_str(), kChurnRounds, updated.c_str());
  for (double fraction : fractions) {
    std::vector<double> writes, converged, refreshed, ratios;
    std::string per_round, counts;
    for (int round = 0; round < kChurnRounds; ++round) {
      db.Sql("VACUUM ANALYZE " + c.tables + ", " + c.target);
      const auto first_write = Clock::now();
      counts = c.writes(fraction, round);
      // Timed from the last write's commit, as group_bench times its churn:
      // the writes themselves are the app's cost, and a REFRESH would follow
      // them too. (The drains may start on the first writes meanwhile.)
      writes.push_back(Since(first_write));
      const auto committed = Clock::now();
      db.AwaitConverged(1800000);
      converged.push_back(Since(committed));
      refreshed.push_back(db.TimeSql("REFRESH MATERIALIZED VIEW " + view));
      const std::string wrong =
          db.Scalar("SELECT count(*) FROM ((SELECT " + c.compared + " FROM " + c.target +
                    " EXCEPT ALL TABLE " + view + ") UNION ALL (TABLE " + view +
                    " EXCEPT ALL SELECT " + c.compared + " FROM " + c.target + ")) d");
      if (wrong != "0") {
        throw BenchError(c.target + " differs from the view: " + wrong + " rows");
      }
      ratios.push_back(refreshed.back() / converged.back());
      char sample[64];
      std::snprintf(sample, sizeof sample, "%s%.1fx (%.0f ms)", round ? ", " : "", ratios.back(),
                    converged.back() * 1000);
      per_round += sample;
    }
    std::printf("| %.1f%% | %s | %.3f | %.3f | %.3f | %.1fx | %s |\n", fraction * 100,
                counts.c_str(), Median(writes), Median(converged), Median(refreshed),
                Median(ratios), per_round.c_str());
    std::fflush(stdout);
  }
}

}  // namespace trellis::bench
