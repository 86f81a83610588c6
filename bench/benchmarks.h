// The engine benchmarks. Each gets its own database on the shared
// cluster, so one benchmark's catalog and workers never see another's tables.
#pragma once

#include <string>

#include "report.h"
#include "throwaway_cluster.h"

namespace trellis::bench {

struct Config {
  std::string pgbench = "/usr/lib/postgresql/15/bin/pgbench";
  int rounds = 5;  // interleaved A/B rounds of the capture benchmarks
  int bulk_rows = 100000;
  int pgbench_seconds = 5;
  int fresh_seconds = 10;
  int fresh_rate = 2000;  // writes per second, paced
  int drain_rows = 200000;
  int drain_rounds = 3;
  int backfill_rows = 1000000;
  int backfill_rounds = 2;
  // What the captured tables' transform selects (benchmarks 1, 2, 6) and the
  // columns of an index both tables get ("" none): the aggregate benchmarks
  // (group_bench) swap in a GROUP BY and the index its groups are found by.
  std::string capture_select = "v * 2 AS v2, upper(w) AS w_up";
  std::string capture_index;
  // Benchmark 3 over a GROUP BY target instead of a projection when > 0:
  // the source is first filled with fresh_prefill rows in this many groups.
  int fresh_groups = 0;
  long fresh_prefill = 0;
  // The capture mode of every benchmark database's catalog ("triggers" or
  // "logical": benchmark 8 runs benchmark 3 in both).
  std::string capture_mode = "triggers";
  // Benchmark 7: the rounds of each shape and the prefill every shape gets.
  int stage_rounds = 2;
  int stage_groups = 1000;
  long stage_prefill = 100000;
  // Benchmark 8 runs only its bulk INSERT legs (--logical-legs bulk), for
  // more rounds of that figure alone.
  bool logical_bulk_only = false;
  // Benchmark 9: the keys of each backlog (rows of each source) and rounds.
  long catchup_rows = 1000000;
  int catchup_rounds = 3;
};

// 1. INSERT ... SELECT of bulk_rows into a plain table vs a captured one.
Section BulkCapture(const test::ThrowawayCluster& cluster, const Config& config);
// 2. Single-row INSERTs with pgbench, 1 and 4 clients, plain vs captured.
Section PgbenchCapture(const test::ThrowawayCluster& cluster, const Config& config);
// 3. Commit -> visible in target latency under a paced write load.
Section Freshness(const test::ThrowawayCluster& cluster, const Config& config);
// 7. Benchmark 3 through one, two and three stages (freshness_run.h).
Section FreshnessAcrossStages(const test::ThrowawayCluster& cluster, const Config& config);
// 8. Capture by logical decoding beside trigger capture, in one run on a
// durable logical cluster: pgbench INSERT and UPDATE writer cost (1 and 4
// clients), a bulk INSERT, and benchmark 3's freshness in both modes.
Section LogicalCapture(const Config& config);
// 9. Keys per second drained after a backlog of catchup_rows changed keys,
// logical decoding against triggers, over a projection and a GROUP BY.
Section CatchupThroughput(const Config& config);
// 4. Keys per second draining one UPDATE of every row of a live projection.
Section DrainThroughput(const test::ThrowawayCluster& cluster, const Config& config);
// 5. Backfill of backfill_rows vs CREATE TABLE AS (with and without a key).
Section Backfill(const test::ThrowawayCluster& cluster, const Config& config);

}  // namespace trellis::bench
