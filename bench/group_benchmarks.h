// The aggregate benchmarks of issue 11 (group_bench; bench/README.md,
// "Aggregates"): a GROUP BY transform on 1M rows in 10k groups against
// REFRESH MATERIALIZED VIEW and against pg_ivm's write cost. Capture cost and
// freshness of a group target reuse benchmarks 1, 3 and 6 (benchmarks.h)
// with a GROUP BY swapped in. Each gets its own database on the cluster.
#pragma once

#include <string>

#include "report.h"
#include "throwaway_cluster.h"

namespace trellis::bench {

struct GroupConfig {
  std::string pgbench = "/usr/lib/postgresql/15/bin/pgbench";
  long rows = 1000000;
  int groups = 10000;
  int rounds = 2;           // repeats of every churn level / A-B-C write legs
  int pgbench_seconds = 5;  // per write-cost leg
  // > 0: the orders tables are hash-partitioned by id into this many
  // partitions (a partitioned source takes deltas like a plain one).
  int partitions = 0;
};

// `table` (id bigint PRIMARY KEY, customer_id int NOT NULL, amount int) with
// config.rows rows in config.groups groups and an index on customer_id,
// vacuumed and analysed; hash-partitioned by id (`table`_p0, ...) when
// config.partitions is set.
void CreateOrders(class BenchDb& db, const std::string& table, const GroupConfig& config);
// The benchmarks' query over `table`: sum, count, avg and max of amount by
// customer_id, as a SELECT list + GROUP BY (no FROM).
std::string TotalsSelect();

// a. After N random-row UPDATEs (0.01%, 0.1%, 1%, 10% of the rows): time
// until the transform's target has converged vs REFRESH MATERIALIZED VIEW.
Section GroupVsRefresh(const test::ThrowawayCluster& cluster, const GroupConfig& config);
// b. Single-row UPDATE latency: plain, with a pg_ivm IMMV, with a transform.
Section GroupWriteCost(const test::ThrowawayCluster& cluster, const GroupConfig& config);

}  // namespace trellis::bench
