// One freshness measurement (benchmark 3's method) over a chosen shape of
// transform, so that benchmark 3 (one projection or GROUP BY) and benchmark
// 7 (the same writes through two and three stages) measure alike: a paced
// pgbench inserts into `fresh`, and a deferred constraint trigger on the
// last target, `fresh_t`, records commit -> visible on the server's clock.
#pragma once

#include <optional>
#include <string>

#include "benchmarks.h"
#include "pgbench_run.h"
#include "throwaway_cluster.h"
#include "trellis/types.h"

namespace trellis::bench {

enum class FreshShape {
  kProjection,     // FROM fresh SELECT written_at, v: one stage
  kGroup,          // FROM fresh ... GROUP BY v: one stage
  kGroupOverJoin,  // FROM fresh JOIN fresh_dim ... GROUP BY v: a hidden join stage + the grouping
  kChain,          // fresh -> projection -> join to fresh_dim -> GROUP BY: three transforms
  kCompiled,       // one transform with HAVING over a join: join, grouping, projection stages
};

// The shape's definition in words, for reports.
std::string Describe(FreshShape shape);

struct FreshnessRun {
  double p50 = 0, p90 = 0, p99 = 0, max = 0;         // ms, commit -> visible
  double first_second_p50 = 0, last_second_p50 = 0;  // NaN when no row was written then
  long written = 0;
  long pending = 0;  // rows never seen: every figure above is then a lower bound
  PgbenchResult pgbench;
  TransformStatus at_stop;             // of fresh_t when the writer stopped
  std::optional<double> tail_seconds;  // the backlog's drain after the writer stopped
};

// Runs the writer against a new database `database` holding `shape`.
// The grouped shapes (and, when config.fresh_prefill > 0, all) take
// config.fresh_prefill rows dated 2000 in config.fresh_groups groups first;
// the writer's v ranges over those groups.
FreshnessRun MeasureFreshness(const test::ThrowawayCluster& cluster, const Config& config,
                              FreshShape shape, const std::string& database);

}  // namespace trellis::bench
