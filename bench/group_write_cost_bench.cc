// Benchmark b: what maintaining the aggregate adds to a single-row UPDATE.
// Three tables of the same rows: plain; read by a pg_ivm IMMV of the query
// (maintained inside the writer's transaction); read by a GROUP BY transform
// (the writer pays only capture; the workers are stopped while pgbench runs
// and drain the backlog after, outside the measurement, as in benchmark 2's
// capture leg). pgbench, one client, `UPDATE t SET amount = :a WHERE id =
// :id` on random rows, legs rotating each round. When pg_ivm is not
// installed on the server the IMMV leg is skipped and the report says so.
#include <spdlog/spdlog.h>

#include "bench_db.h"
#include "group_benchmarks.h"
#include "pgbench_run.h"
#include "stats.h"

namespace trellis::bench {
namespace {

constexpr int kDrainCapMs = 120000;

std::string UpdateScript(const std::string& table, long rows) {
  return "\\set id random(1, " + std::to_string(rows) + ")\n\\set a random(0, 999)\nUPDATE " +
         table + " SET amount = :a WHERE id = :id;\n";
}

// Creates the IMMV, or returns why it cannot. pg_ivm wants its library
// preloaded in every session that writes (its README): new sessions of this
// database get it, which is what pgbench opens.
std::optional<std::string> CreateImmv(BenchDb& db, const std::string& database) {
  auto created = db.conn().Exec("CREATE EXTENSION IF NOT EXISTS pg_ivm");
  if (!created.ok()) {
    return "pg_ivm is not installed on this server (" + created.ToString() +
           "); build it with bench/build_pg_ivm.sh";
  }
  db.Sql("ALTER DATABASE " + database + " SET session_preload_libraries = 'pg_ivm'");
  db.Sql("SELECT pgivm.create_immv('ivm_totals', $q$" + TotalsSelect() +
         " FROM orders_ivm GROUP BY customer_id$q$)");
  return std::nullopt;
}

}  // namespace

Section GroupWriteCost(const test::ThrowawayCluster& cluster, const GroupConfig& config) {
  const std::string database = "group_write_cost";
  BenchDb db(cluster, database);
  for (const char* table : {"orders_plain", "orders_ivm", "orders_trellis"}) {
    CreateOrders(db, table, config);
  }
  const std::optional<std::string> no_ivm = CreateImmv(db, database);
  if (no_ivm) spdlog::warn("group bench b: {}", *no_ivm);
  db.Apply("TRANSFORM trellis_totals FROM orders_trellis " + TotalsSelect() +
           " GROUP BY customer_id");
  {
    auto workers = db.StartWorkers();
    db.AwaitConverged(kDrainCapMs);
  }

  PgbenchRun run{config.pgbench, db.url(), "", 1, config.pgbench_seconds, std::nullopt};
  std::vector<double> plain, ivm, trellis, ivm_added, trellis_added, shares;
  std::string drains;
  for (int round = 0; round < config.rounds; ++round) {
    double lat[3] = {0, 0, 0};
    for (int leg = 0; leg < 3; ++leg) {
      const int which = (leg + round) % 3;
      if (which == 1 && no_ivm) continue;
      run.script = UpdateScript(which == 0   ? "orders_plain"
                                : which == 1 ? "orders_ivm"
                                             : "orders_trellis",
                                config.rows);
      lat[which] = RunPgbench(run).latency_ms;
      if (which == 2) {
        auto workers = db.StartWorkers();
        const auto drained = db.TryAwaitConverged(kDrainCapMs);
        drains +=
            (drains.empty() ? "" : ", ") + (drained ? Fixed(*drained, 2) : std::string("cap"));
      }
    }
    spdlog::warn("group bench b round {}: plain {:.3f} ms, ivm {:.3f} ms, trellis {:.3f} ms", round,
                 lat[0], lat[1], lat[2]);
    plain.push_back(lat[0]);
    trellis.push_back(lat[2]);
    trellis_added.push_back(lat[2] - lat[0]);
    if (!no_ivm) {
      ivm.push_back(lat[1]);
      ivm_added.push_back(lat[1] - lat[0]);
      shares.push_back((lat[2] - lat[0]) / (lat[1] - lat[0]));
    }
  }

  Section s;
  s.title = "b. Write cost: single-row UPDATE with a pg_ivm IMMV vs a transform";
  s.method =
      "Three tables of the same " + std::to_string(config.rows) + " rows in " +
      std::to_string(config.groups) + " groups: plain; read by a pg_ivm IMMV of `" +
      TotalsSelect() +
      " ... GROUP BY customer_id` (maintained in the writer's transaction); read by a "
      "transform of the same query (the writer pays capture; the workers are stopped during "
      "the run and drain its backlog after it, outside the measurement). pgbench `-M prepared "
      "-c 1 -T " +
      std::to_string(config.pgbench_seconds) +
      "`, `UPDATE t SET amount = :a WHERE id = :id` on random rows, autocommit, legs rotating "
      "each round; " +
      std::to_string(config.rounds) +
      " rounds. Added = leg's average latency - the plain table's, per round; medians.";
  s.figures.push_back({"UPDATE latency, plain", Fixed(Median(plain), 3) + " ms", "", std::nullopt});
  s.figures.push_back(
      {"transform adds", Fixed(Median(trellis_added), 3) + " ms", "", std::nullopt});
  if (no_ivm) {
    s.figures.push_back({"pg_ivm leg", "skipped: " + *no_ivm, "", std::nullopt});
  } else {
    s.figures.push_back({"IMMV adds", Fixed(Median(ivm_added), 3) + " ms", "", std::nullopt});
    const double share = Median(shares);
    s.figures.push_back(
        {"transform's added latency / IMMV's", Fixed(share, 2), "<= 0.33", share <= 1.0 / 3});
    s.raw.push_back("IMMV ms: " + List(ivm, 3) + "; added " + List(ivm_added, 3));
    s.raw.push_back("shares: " + List(shares, 2));
  }
  s.raw.push_back("plain ms: " + List(plain, 3));
  s.raw.push_back("transform ms: " + List(trellis, 3) + "; added " + List(trellis_added, 3));
  s.raw.push_back("seconds the workers took to drain each transform leg's backlog: " + drains);
  return s;
}

}  // namespace trellis::bench
