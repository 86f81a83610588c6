// The sections join_bench and fan_out_join_bench share, over one set of
// tables (orders, customers, regions) on one BenchDb whose workers run:
//
//   fan-out   one customer's rename, time to convergence, against a
//             projection's UPDATE of as many rows (that customer's items, a
//             copy of its orders): the same number of target rows
//             rewritten, reached without a join; rounds alternate which
//             goes first.
//   churn     after a round of writes at a churn fraction, the time from the
//             last write's commit to convergence against REFRESH
//             MATERIALIZED VIEW of the same join; the target is checked
//             equal to the view (0 differences) after every round.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "bench_db.h"

namespace trellis::bench {

using Clock = std::chrono::steady_clock;

// The main() of a join bench: `[--rows N]` (default 1,000,000), then
// `run(cluster, N)` on a throwaway cluster, between two load-average lines.
// An exception is printed and makes the exit status 1.
int JoinBenchMain(int argc, char** argv,
                  const std::function<void(const test::ThrowawayCluster&, long rows)>& run);

// Seconds since `t`.
double Since(Clock::time_point t);

// Prints "load average <when>: " and /proc/loadavg.
void PrintLoad(const char* when);

// Diagnosis: with JOIN_BENCH_LOG_MS=<ms> in the environment, the server logs
// every statement slower than that (to the testkit cluster's postgres.log,
// which lasts as long as the run).
void LogSlowStatements(BenchDb& db);

// orders<suffix> (`rows`, `per_customer` of them per customer, order g of
// customer 1 + g % customers), customers<suffix> (rows / per_customer,
// named 'customer <id>', region 1 + id % 100) and regions<suffix> (100),
// indexed on orders(customer_id) and customers(region_id), vacuumed and
// analysed.
void CreateJoinTables(BenchDb& db, const std::string& suffix, long rows, long per_customer);

// The fan-out's baseline: `items`, a copy of orders (same customer spread),
// and the projection transform item_rows over it; waits until it is built.
void DefineItemProjection(BenchDb& db);

// Seven rounds of a rename of one customer against an UPDATE of that
// customer's items, medians printed as a table. Each round checks that
// `per_customer` rows of `target` show the new name in `name_column`.
void FanOut(BenchDb& db, const std::string& target, const std::string& name_column, long customers,
            long per_customer);

// The writes every churn round makes: `fraction` of the orders, other ones
// each round (`round` moves the seed); returns how many ids it drew.
long UpdateRandomOrders(BenchDb& db, long rows, double fraction, int round);
// `fraction` of the `count` rows of `table` (the first ids), `set` applied;
// returns how many.
long UpdateFirstRows(BenchDb& db, const std::string& table, const std::string& set, long count,
                     double fraction);

struct ChurnCase {
  std::string title;  // the table's heading, after "###"
  std::string target;
  std::string compared;  // the target's columns, in the order of the view's
  std::string query;     // the join, as the view computes it
  std::string tables;    // "orders, customers": vacuumed before each round
  // A round's writes at `fraction`; returns the rows updated per table,
  // "/"-separated in the order of `tables`.
  std::function<std::string(double fraction, int round)> writes;
};

// Creates the view <target>_view AS `query`, then for each fraction runs
// five rounds (the writes, convergence timed from the last commit, REFRESH,
// the check) and prints one row of medians with every round's ratio.
void ChurnVsRefresh(BenchDb& db, const ChurnCase& c, const std::vector<double>& fractions);

}  // namespace trellis::bench
