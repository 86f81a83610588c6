// group_bench: the aggregate benchmarks of issue 11 against a throwaway
// cluster (bench/README.md, "Aggregates").
//   group_bench [--out FILE] [--only a,b,c,d] [--rounds N] [--rows N]
//               [--partitions N] [--pgbench-seconds S] [--pgbench PATH]
//   a  GROUP BY transform vs REFRESH MATERIALIZED VIEW at 0.01-10% churn
//   b  single-row UPDATE cost: pg_ivm IMMV vs transform (needs pg_ivm
//      installed on the server: bench/build_pg_ivm.sh; skipped without)
//   c  capture cost of a table read by a GROUP BY (bulk; pgbench durable)
//   d  freshness of a GROUP BY target at 2 000 writes/s
// Prints the markdown report to stdout (and --out FILE); progress on stderr.
// Every headline figure is a ratio against a baseline in the same run.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <set>

#include "bench_db.h"
#include "benchmarks.h"
#include "flags.h"
#include "group_benchmarks.h"

namespace trellis::bench {
namespace {

constexpr const char* kUsage =
    "usage: group_bench [--out FILE] [--only a,b,c,d] [--rounds N] [--rows N]\n"
    "                   [--partitions N] [--pgbench-seconds S] [--pgbench PATH]\n";

struct Args {
  GroupConfig config;
  std::string out;
  std::string only = "abcd";
};

Args Parse(int argc, char** argv) {
  Args a;
  if (const char* bin = std::getenv("TRELLIS_PG_BIN"))
    a.config.pgbench = std::string(bin) + "/pgbench";
  const Flags flags(argc, argv, kUsage);
  flags.Each([&](const std::string& flag, const std::string& value) {
    if (flag == "--out") {
      a.out = value;
    } else if (flag == "--only") {
      a.only = value;
    } else if (flag == "--rounds") {
      a.config.rounds = static_cast<int>(flags.Positive(flag, value));
    } else if (flag == "--rows") {
      a.config.rows = flags.Positive(flag, value);
    } else if (flag == "--partitions") {
      a.config.partitions = static_cast<int>(flags.Positive(flag, value));
    } else if (flag == "--pgbench-seconds") {
      a.config.pgbench_seconds = static_cast<int>(flags.Positive(flag, value));
    } else if (flag == "--pgbench") {
      a.config.pgbench = value;
    } else {
      return false;
    }
    return true;
  });
  return a;
}

// Benchmarks 1, 3 and 6 of engine_bench with a GROUP BY in place of the
// projection, on the same shapes as a and b.
Config AggregateConfig(const GroupConfig& group) {
  Config c;
  c.pgbench = group.pgbench;
  c.rounds = std::max(3, group.rounds);
  c.pgbench_seconds = group.pgbench_seconds;
  c.capture_select =
      "v, count(*) AS n, sum(id) AS total, avg(id) AS mean, max(id) AS top GROUP BY v";
  c.capture_index = "v";
  c.fresh_groups = group.groups;
  c.fresh_prefill = group.rows;
  return c;
}

Section Retitled(Section s, const std::string& title, const std::string& prefix) {
  s.title = title;
  s.method = prefix + s.method;
  return s;
}

int Run(const Args& args) {
  test::ThrowawayCluster cluster(TRELLIS_TESTKIT_BINARY);
  double load[3] = {0, 0, 0};
  getloadavg(load, 3);
  const Config aggregate = AggregateConfig(args.config);
  const std::string what =
      "`TRANSFORM ... SELECT " + aggregate.capture_select + "` (both tables indexed on v). ";
  const std::vector<std::pair<char, std::function<Section()>>> benches = {
      {'a', [&] { return GroupVsRefresh(cluster, args.config); }},
      {'b', [&] { return GroupWriteCost(cluster, args.config); }},
      {'c',
       [&] {
         return Retitled(BulkCapture(cluster, aggregate),
                         "c1. Capture cost of a table read by a GROUP BY, bulk", what);
       }},
      {'c',
       [&] {
         test::ThrowawayCluster durable(TRELLIS_TESTKIT_BINARY, {"--durable"});
         return Retitled(PgbenchCapture(durable, aggregate),
                         "c2. Capture cost of a table read by a GROUP BY, pgbench, durable",
                         "On a testkit cluster started with --durable. " + what);
       }},
      {'d',
       [&] {
         return Retitled(Freshness(cluster, aggregate), "d. Freshness of a GROUP BY target",
                         "The source is first filled with " + std::to_string(args.config.rows) +
                             " rows in " + std::to_string(args.config.groups) +
                             " groups (index on (v, written_at)); the transform is `SELECT v, "
                             "count(*) AS n, max(written_at) AS written_at GROUP BY v`, and a "
                             "group's target row marks every run write of the group written no "
                             "later than its max(written_at) as visible. ");
       }},
  };
  Report report;
  int failed = 0;
  for (const auto& [name, bench] : benches) {
    if (args.only.find(name) == std::string::npos) continue;
    spdlog::warn("group bench {} starting", name);
    try {
      report.Add(bench());
    } catch (const BenchError& e) {
      ++failed;
      report.Add(Section{std::string("benchmark ") + name + " FAILED", e.what(), {}, {}});
    }
  }
  const std::string note = "2 cores shared with other jobs (load average " +
                           std::to_string(load[0]).substr(0, 4) +
                           " at start); trellis-testkit cluster (fsync off unless said). "
                           "Read the ratios: each compares legs run in this same run.";
  const std::string markdown = report.Markdown(note);
  std::cout << markdown << std::flush;
  if (!args.out.empty()) {
    std::ofstream out(args.out);
    out << markdown;
    if (!out) return 1;
  }
  return failed == 0 ? 0 : 1;
}

}  // namespace
}  // namespace trellis::bench

int main(int argc, char** argv) {
  spdlog::set_default_logger(spdlog::stderr_color_mt("bench"));
  spdlog::set_level(spdlog::level::warn);
  return trellis::bench::Run(trellis::bench::Parse(argc, argv));
}
