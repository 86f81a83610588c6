// engine_bench: the "Engine core" benchmarks against a throwaway cluster.
//   engine_bench [--out FILE] [--only 1,2,...] [--rounds N] [--pgbench PATH]
// Prints the report (markdown) to stdout and, with --out, writes it to FILE.
// Progress goes to stderr. Numbers are only comparable within one run: every
// headline figure is a ratio against a baseline measured alongside it.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <set>
#include <sstream>
#include <thread>

#include "bench_db.h"
#include "benchmarks.h"
#include "flags.h"
#include "pg/connection.h"

namespace trellis::bench {
namespace {

constexpr const char* kUsage =
    "usage: engine_bench [--out FILE] [--only 1,2,3,4,5,6,7,8,9] [--rounds N]\n"
    "                    [--pgbench-seconds S] [--fresh-seconds S] [--backfill-rows N]\n"
    "                    [--backfill-rounds N] [--stage-rounds N] [--catchup-rows N]\n"
    "                    [--catchup-rounds N] [--logical-legs all|bulk] [--pgbench PATH]\n";

struct Args {
  Config config;
  std::string out;
  std::set<int> only = {1, 2, 3, 4, 5, 6, 7};
};

Args Parse(int argc, char** argv) {
  Args a;
  if (const char* bin = std::getenv("TRELLIS_PG_BIN"))
    a.config.pgbench = std::string(bin) + "/pgbench";
  const Flags flags(argc, argv, kUsage);
  flags.Each([&](const std::string& flag, const std::string& value) {
    auto number = [&] { return static_cast<int>(flags.Positive(flag, value)); };
    if (flag == "--out") {
      a.out = value;
    } else if (flag == "--only") {
      a.only.clear();
      std::stringstream list(value);
      for (std::string item; std::getline(list, item, ',');) a.only.insert(std::atoi(item.c_str()));
    } else if (flag == "--rounds") {
      a.config.rounds = number();
    } else if (flag == "--pgbench-seconds") {
      a.config.pgbench_seconds = number();
    } else if (flag == "--fresh-seconds") {
      a.config.fresh_seconds = number();
    } else if (flag == "--stage-rounds") {
      a.config.stage_rounds = number();
    } else if (flag == "--backfill-rows") {
      a.config.backfill_rows = number();
    } else if (flag == "--backfill-rounds") {
      a.config.backfill_rounds = number();
    } else if (flag == "--logical-legs") {
      if (value != "all" && value != "bulk") flags.Fail("--logical-legs: all or bulk");
      a.config.logical_bulk_only = value == "bulk";
    } else if (flag == "--catchup-rows") {
      a.config.catchup_rows = flags.Positive(flag, value);
    } else if (flag == "--catchup-rounds") {
      a.config.catchup_rounds = number();
    } else if (flag == "--pgbench") {
      a.config.pgbench = value;
    } else {
      return false;
    }
    return true;
  });
  return a;
}

std::string MachineNote(const test::ThrowawayCluster& cluster) {
  double load[3] = {0, 0, 0};
  getloadavg(load, 3);
  std::string version = "?";
  if (auto conn = pg::Connection::Open(cluster.url(), "trellis bench"); conn.ok()) {
    if (auto rows = conn.value()->Query("SHOW server_version"); rows.ok())
      version = rows->text(0, 0);
  }
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  return "Machine: " + std::string(host) + ", " +
         std::to_string(std::thread::hardware_concurrency()) +
         " cores shared with other jobs (load average " + std::to_string(load[0]).substr(0, 4) +
         " at start), PostgreSQL " + version +
         " from trellis-testkit (fsync, synchronous_commit and full_page_writes off, "
         "shared_buffers 128MB). Absolute numbers are noisy; the ratios compare runs "
         "interleaved in this same run.";
}

int Run(const Args& args) {
  test::ThrowawayCluster cluster(TRELLIS_TESTKIT_BINARY);
  const std::string note = MachineNote(cluster);  // the load before we add ours
  Report report;
  const std::vector<std::pair<int, std::function<Section()>>> benches = {
      {1, [&] { return BulkCapture(cluster, args.config); }},
      {2, [&] { return PgbenchCapture(cluster, args.config); }},
      {3, [&] { return Freshness(cluster, args.config); }},
      {4, [&] { return DrainThroughput(cluster, args.config); }},
      {5, [&] { return Backfill(cluster, args.config); }},
      {6,
       [&] {
         // Benchmark 2 again on a cluster that pays for durable commits, as
         // production does: the capture row then costs a small share of a
         // commit instead of doubling a commit that costs almost nothing.
         test::ThrowawayCluster durable(TRELLIS_TESTKIT_BINARY, {"--durable"});
         Section section = PgbenchCapture(durable, args.config);
         section.title = "6. Capture overhead, pgbench, durable commits";
         section.method =
             "As benchmark 2, on a second testkit cluster started with --durable "
             "(fsync, synchronous_commit and full_page_writes on). " +
             section.method;
         return section;
       }},
      {7, [&] { return FreshnessAcrossStages(cluster, args.config); }},
      // Not in the default set: it starts a cluster of its own (logical,
      // durable) and takes about 6 minutes; run it with --only 8.
      {8, [&] { return LogicalCapture(args.config); }},
      // Not in the default set either: a cluster of its own, 1M-row sources,
      // about 15 minutes; run it with --only 9.
      {9, [&] { return CatchupThroughput(args.config); }},
  };
  int failed = 0;
  for (const auto& [n, bench] : benches) {
    if (!args.only.count(n)) continue;
    spdlog::warn("bench {} starting", n);
    try {
      report.Add(bench());
    } catch (const BenchError& e) {
      ++failed;
      report.Add(Section{"benchmark " + std::to_string(n) + " FAILED", e.what(), {}, {}});
    }
  }
  const std::string markdown = report.Markdown(note);
  std::cout << markdown << std::flush;
  if (!args.out.empty()) {
    std::ofstream out(args.out);
    out << markdown;
    if (!out) {
      std::cerr << "cannot write " << args.out << "\n";
      return 1;
    }
  }
  return failed == 0 ? 0 : 1;
}

}  // namespace
}  // namespace trellis::bench

int main(int argc, char** argv) {
  // The workers log through spdlog; keep stdout for the report.
  spdlog::set_default_logger(spdlog::stderr_color_mt("bench"));
  spdlog::set_level(spdlog::level::warn);
  return trellis::bench::Run(trellis::bench::Parse(argc, argv));
}
