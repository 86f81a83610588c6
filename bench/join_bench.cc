// join_bench: a 3-table JOIN transform (orders JOIN customers LEFT JOIN
// regions), end to end through the engine's workers (capture, staging,
// drain), in one run on one throwaway cluster:
//
//   fan-out   update 1 customer that 1,000 orders read, time to convergence,
//             against a projection's update of 1,000 rows of a table of the
//             same shape (the same 1,000 target rows rewritten, reached
//             without a join); rounds alternate which goes first.
//   refresh   after updating a fraction of the rows of every table (orders,
//             customers, regions; 0.1% and 1%), the time from the last
//             write's commit to convergence against REFRESH MATERIALIZED
//             VIEW of the same join; the target is checked equal to the view.
//             (These two sections are join_sections.h's, shared with
//             fan_out_join_bench.)
//   write     what maintaining the join adds to single-row writes (an order
//             UPDATE, a customer rename): plain tables, tables read by a
//             pg_ivm IMMV of the same join (maintained in the writer's
//             transaction), tables read by the transform (the writer pays
//             capture; workers stopped, as capture_bench does). Skipped, and
//             said so, when pg_ivm is not installed (bench/build_pg_ivm.sh).
//
//   join_bench [--rows N]   (N orders, default 1,000,000; N/1000 customers)
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "bench_db.h"
#include "join_sections.h"
#include "stats.h"

namespace trellis::bench {
namespace {

constexpr const char* kJoinSelect =
    " SELECT o.id, c.name AS customer, r.label AS region, o.amount * r.vat AS gross";

// `left`: regions LEFT-joined (pg_ivm maintains inner joins only, so the
// write-cost section compares the all-inner form).
std::string JoinFrom(const std::string& suffix, bool left = true) {
  return " FROM orders" + suffix + " o JOIN customers" + suffix + " c ON o.customer_id = c.id " +
         (left ? "LEFT " : "") + "JOIN regions" + suffix + " r ON c.region_id = r.id";
}

// Churn on every table: orders, customers and regions, `fraction` of each.
void Refresh(BenchDb& db, long rows) {
  const long customers = std::max(1L, rows / 1000);
  ChurnCase c;
  char title[128];
  std::snprintf(title, sizeof title, "Maintenance vs REFRESH MATERIALIZED VIEW: %ld orders", rows);
  c.title = title;
  c.target = "join_rows";
  c.compared = "id, customer, region, gross";
  c.query = std::string(kJoinSelect) + JoinFrom("");
  c.tables = "orders, customers, regions";
  c.writes = [&db, rows, customers](double fraction, int round) {
    const long o = UpdateRandomOrders(db, rows, fraction, round);
    const long k = UpdateFirstRows(db, "customers", "name = name || '+'", customers, fraction);
    const long r = UpdateFirstRows(db, "regions", "vat = vat + 0.01", 100, fraction);
    return std::to_string(o) + "/" + std::to_string(k) + "/" + std::to_string(r);
  };
  ChurnVsRefresh(db, c, {0.001, 0.01});
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
  for (const char* suffix : {"_plain", "_ivm", "_trellis"}) {
    CreateJoinTables(db, suffix, rows, 1000);
  }
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

void Run(const test::ThrowawayCluster& cluster, long rows) {
  {
    BenchDb db(cluster, "join_bench");
    LogSlowStatements(db);
    std::cerr << "loading " << rows << " orders\n";
    CreateJoinTables(db, "", rows, 1000);
    auto workers = db.StartWorkers();
    db.Apply(std::string("TRANSFORM join_rows") + JoinFrom("") +
             " SELECT c.name AS customer, r.label AS region, o.amount * r.vat AS gross");
    const auto built = Clock::now();
    db.AwaitConverged(1800000);
    std::cerr << "join_rows built in " << Since(built) << " s\n";
    DefineItemProjection(db);
    const long customers = std::max(1L, rows / 1000);
    FanOut(db, "join_rows", "customer", customers, rows / customers);
    Refresh(db, rows);
  }
  WriteCost(cluster);
}

}  // namespace
}  // namespace trellis::bench

int main(int argc, char** argv) {
  return trellis::bench::JoinBenchMain(argc, argv, trellis::bench::Run);
}
