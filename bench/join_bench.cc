// join_bench: a 3-table JOIN transform (orders JOIN customers LEFT JOIN
// regions), end to end through the engine's workers (capture, staging,
// drain), in one run on one throwaway cluster:
//
//   fan-out   update 1 customer that 1,000 orders read, time to convergence,
//             against a projection's update of 1,000 rows of a table of the
//             same shape (the same 1,000 target rows rewritten, reached
//             without a join); rounds alternate which goes first.
//   refresh   after updating a fraction of the rows of every table (orders,
//             customers, regions; 0.1% and 1%), the time from the first
//             write to convergence against REFRESH MATERIALIZED VIEW of the
//             same join; the target is checked equal to the view.
//   write     what maintaining the join adds to single-row writes (an order
//             UPDATE, a customer rename): plain tables, tables read by a
//             pg_ivm IMMV of the same join (maintained in the writer's
//             transaction), tables read by the transform (the writer pays
//             capture; workers stopped, as capture_bench does). Skipped, and
//             said so, when pg_ivm is not installed (bench/build_pg_ivm.sh).
//
//   join_bench [--rows N]   (N orders, default 1,000,000; N/1000 customers)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "bench_db.h"

namespace trellis::bench {
namespace {

using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

constexpr const char* kJoinSelect =
    " SELECT o.id, c.name AS customer, r.label AS region, o.amount * r.vat AS gross";

// `left`: regions LEFT-joined (pg_ivm maintains inner joins only, so the
// write-cost section compares the all-inner form).
std::string JoinFrom(const std::string& suffix, bool left = true) {
  return " FROM orders" + suffix + " o JOIN customers" + suffix + " c ON o.customer_id = c.id " +
         (left ? "LEFT " : "") + "JOIN regions" + suffix + " r ON c.region_id = r.id";
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

// orders<suffix> (`rows`, 1,000 per customer), customers<suffix>, regions<suffix> (100).
void CreateTables(BenchDb& db, const std::string& suffix, long rows) {
  const std::string customers = std::to_string(std::max(1L, rows / 1000));
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

void FanOut(BenchDb& db, long rows) {
  // items: the projection's source, orders' shape and customer spread.
  db.Sql("CREATE TABLE items AS TABLE orders");
  db.Sql("ALTER TABLE items ADD PRIMARY KEY (id)");
  db.Sql("CREATE INDEX ON items (customer_id)");
  db.Sql("VACUUM ANALYZE items");
  db.Apply("TRANSFORM item_rows FROM items i SELECT i.amount * 2 AS twice, i.note");
  db.AwaitConverged(1800000);
  const long customers = std::max(1L, rows / 1000);
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
    const std::string reached = db.Scalar(
        "SELECT count(*) FROM join_rows j JOIN customers c ON c.name = j.customer WHERE c.id = " +
        k);
    if (reached != std::to_string(rows / customers)) {
      throw BenchError("customer " + k + "'s rename reached " + reached + " rows");
    }
  }
  std::printf(
      "\n### Fan-out: 1 customer read by %ld orders vs a projection update of %ld rows\n\n"
      "| rounds | customer update -> converged (median s) | projection update -> converged "
      "(median s) | ratio |\n|---|---|---|---|\n| %zu | %.3f | %.3f | %.2fx |\n",
      rows / customers, rows / customers, join.size(), Median(join), Median(projection),
      Median(join) / Median(projection));
  std::fflush(stdout);
}

// Rounds per churn level: one sample at 0.1% churn falls in one of two
// groups (both writes staged in one batch, or in two), so the figure is the
// median of several, with every round's ratio printed beside it.
constexpr int kChurnRounds = 5;

void Refresh(BenchDb& db, long rows) {
  db.Sql(std::string("CREATE MATERIALIZED VIEW mv AS") + kJoinSelect + JoinFrom(""));
  std::printf(
      "\n### Maintenance vs REFRESH MATERIALIZED VIEW (%ld orders, %d rounds, medians)\n\n"
      "| churn | rows updated (orders/customers/regions) | the writes s | trellis: last commit -> "
      "converged s | REFRESH s | REFRESH / trellis | per round |\n|---|---|---|---|---|---|---|\n",
      rows, kChurnRounds);
  const long customers = std::max(1L, rows / 1000);
  if (std::getenv("JOIN_BENCH_LOG_MS") != nullptr) {
    // Diagnosis: the server logs every statement slower than this.
    db.Sql(std::string("ALTER SYSTEM SET log_min_duration_statement = ") +
           std::getenv("JOIN_BENCH_LOG_MS"));
    db.Scalar("SELECT pg_reload_conf()");
  }
  for (double fraction : {0.001, 0.01}) {
    const long o = static_cast<long>(rows * fraction + 0.5);
    const long c = static_cast<long>(customers * fraction + 0.5);
    const long r = static_cast<long>(100 * fraction + 0.5);
    std::vector<double> writes, converged, refreshed, ratios;
    std::string per_round;
    for (int round = 0; round < kChurnRounds; ++round) {
      db.Sql("VACUUM ANALYZE orders, customers, regions, join_rows");
      const auto first_write = Clock::now();
      // Each round updates other orders (the seed moves with the round).
      db.Sql("UPDATE orders SET amount = amount + 1 WHERE id IN (SELECT (1 + abs(hashint8(g * " +
             std::to_string(static_cast<long>(fraction * 1e6)) + " + " +
             std::to_string(round * 1000003L) + ")) % " + std::to_string(rows) +
             ") FROM generate_series(1, " + std::to_string(o) + ") g)");
      db.Sql("UPDATE customers SET name = name || '+' WHERE id <= " + std::to_string(c));
      db.Sql("UPDATE regions SET vat = vat + 0.01 WHERE id <= " + std::to_string(r));
      // Timed from the last write's commit, as group_bench times its churn:
      // the writes themselves are the app's cost, and a REFRESH would follow
      // them too. (The drains may start on the first writes meanwhile.)
      writes.push_back(Since(first_write));
      const auto committed = Clock::now();
      db.AwaitConverged(1800000);
      converged.push_back(Since(committed));
      refreshed.push_back(db.TimeSql("REFRESH MATERIALIZED VIEW mv"));
      const std::string wrong = db.Scalar(
          "SELECT count(*) FROM ((SELECT id, customer, region, gross FROM join_rows EXCEPT ALL "
          "TABLE mv) UNION ALL (TABLE mv EXCEPT ALL SELECT id, customer, region, gross FROM "
          "join_rows)) d");
      if (wrong != "0") throw BenchError("join_rows differs from the view: " + wrong + " rows");
      ratios.push_back(refreshed.back() / converged.back());
      char sample[64];
      std::snprintf(sample, sizeof sample, "%s%.1fx (%.0f ms)", round ? ", " : "", ratios.back(),
                    converged.back() * 1000);
      per_round += sample;
    }
    std::printf("| %.1f%% | %ld/%ld/%ld | %.3f | %.3f | %.3f | %.1fx | %s |\n", fraction * 100, o,
                c, r, Median(writes), Median(converged), Median(refreshed), Median(ratios),
                per_round.c_str());
    std::fflush(stdout);
  }
}

// Seconds per statement of `count` single-row writes made by `write(i)`,
// on a fresh session (one that has the database's preload settings).
template <typename F>
double PerWrite(const std::string& url, int count, F write) {
  auto conn = pg::Connection::Open(url, "join bench writer");
  if (!conn.ok()) throw BenchError(conn.status().ToString());
  const auto start = Clock::now();
  for (int i = 0; i < count; ++i) {
    auto done = conn.value()->Exec(write(i));
    if (!done.ok()) throw BenchError(done.ToString());
  }
  return Since(start) / count;
}

void WriteCost(const test::ThrowawayCluster& cluster) {
  BenchDb db(cluster, "join_write_cost");
  const long rows = 100000;
  for (const char* suffix : {"_plain", "_ivm", "_trellis"}) CreateTables(db, suffix, rows);
  auto ivm = db.conn().Exec("CREATE EXTENSION IF NOT EXISTS pg_ivm");
  std::printf(
      "\n### Write cost: what maintaining the join adds to a single-row write (%ld "
      "orders, all inner joins)\n\n",
      rows);
  if (!ivm.ok()) {
    std::printf(
        "pg_ivm is not installed on this server (%s): its rows are skipped; build it "
        "with bench/build_pg_ivm.sh.\n",
        ivm.ToString().c_str());
  } else {
    db.Sql("ALTER DATABASE join_write_cost SET session_preload_libraries = 'pg_ivm'");
    db.Sql(std::string("SELECT pgivm.create_immv('ivm_rows', $q$") + kJoinSelect +
           JoinFrom("_ivm", false) + "$q$)");
  }
  db.Apply(std::string("TRANSFORM trellis_rows") + JoinFrom("_trellis", false) +
           " SELECT c.name AS customer, r.label AS region, o.amount * r.vat AS gross");
  {
    auto workers = db.StartWorkers();
    db.AwaitConverged(600000);
  }
  std::printf(
      "| write | plain ms | pg_ivm ms | trellis ms | pg_ivm adds ms | trellis adds ms | "
      "trellis / pg_ivm added |\n|---|---|---|---|---|---|---|\n");
  struct Kind {
    const char* name;
    int count;  // writes per leg and round
    std::string (*sql)(const std::string& suffix, int i);
  };
  const Kind kinds[] = {
      {"order UPDATE", 200,
       [](const std::string& s, int i) {
         return "UPDATE orders" + s +
                " SET amount = amount + 1 WHERE id = " + std::to_string(1 + (i * 7919) % 100000);
       }},
      {"customer rename (100 orders)", 30,
       [](const std::string& s, int i) {
         return "UPDATE customers" + s +
                " SET name = name || '.' WHERE id = " + std::to_string(1 + (i * 31) % 100);
       }},
  };
  for (const auto& kind : kinds) {
    std::vector<double> plain, ivm_ms, trellis;
    const int count = kind.count;
    for (int round = 0; round < 3; ++round) {
      // Legs rotate so that none always runs first.
      for (int leg = 0; leg < 3; ++leg) {
        const int which = (leg + round) % 3;
        const std::string suffix = which == 0 ? "_plain" : which == 1 ? "_ivm" : "_trellis";
        if (which == 1 && !ivm.ok()) continue;
        const double s = PerWrite(db.url(), count, [&](int i) { return kind.sql(suffix, i); });
        (which == 0 ? plain : which == 1 ? ivm_ms : trellis).push_back(s * 1000);
      }
    }
    const double p = Median(plain), t = Median(trellis);
    if (ivm_ms.empty()) {
      std::printf("| %s | %.3f | skipped | %.3f | skipped | %.3f | - |\n", kind.name, p, t, t - p);
    } else {
      const double v = Median(ivm_ms);
      std::printf("| %s | %.3f | %.3f | %.3f | %.3f | %.3f | %.4f |\n", kind.name, p, v, t, v - p,
                  t - p, (t - p) / (v - p));
    }
    std::fflush(stdout);
  }
}

int Run(long rows) {
  test::ThrowawayCluster cluster(TRELLIS_TESTKIT_BINARY);
  PrintLoad("at start");
  {
    BenchDb db(cluster, "join_bench");
    std::cerr << "loading " << rows << " orders\n";
    CreateTables(db, "", rows);
    auto workers = db.StartWorkers();
    db.Apply(std::string("TRANSFORM join_rows") + JoinFrom("") +
             " SELECT c.name AS customer, r.label AS region, o.amount * r.vat AS gross");
    const auto built = Clock::now();
    db.AwaitConverged(1800000);
    std::cerr << "join_rows built in " << Since(built) << " s\n";
    FanOut(db, rows);
    Refresh(db, rows);
  }
  WriteCost(cluster);
  PrintLoad("at end");
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
