// full_join_bench: a FULL JOIN of two tables of the same size (issue 25),
// `TRANSFORM full_rows FROM fa a FULL JOIN fb b ON a.k = b.k SELECT a.x,
// b.y` (kind full_outer_join, keyed by the join value), end to end through
// the engine's workers, against REFRESH MATERIALIZED VIEW of the same query
// in the same run.
//
// Each round changes a fraction of each table's rows: a quarter of them
// updated in place, a quarter moved to another join value (the unit they
// leave and the one they reach both change), a quarter inserted and a
// quarter deleted. The time runs from the last write's commit to
// convergence, then the view is refreshed and the target checked equal to
// it (0 differences), every round.
//
// Both tables have an index on k (a unit's recompute reads its rows by it).
// About 5% of each table's join values have no partner on the other side,
// so the target holds matched and unmatched rows of both sides.
//
//   full_join_bench [--rows N]   (N rows per table, default 1,000,000; 5 rounds
//   per churn level; JOIN_BENCH_LOG_MS logs slow statements, join_sections.h)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "bench_db.h"
#include "join_sections.h"
#include "stats.h"

namespace trellis::bench {
namespace {

constexpr int kRounds = 5;

constexpr const char* kJoin = " FROM fa a FULL JOIN fb b ON a.k = b.k";

// Rows in both directions between the target and the view.
constexpr const char* kDifferences =
    "SELECT count(*) FROM ((SELECT x, y FROM full_rows EXCEPT ALL TABLE full_mv) UNION ALL "
    "(TABLE full_mv EXCEPT ALL SELECT x, y FROM full_rows)) d";

// fa's k is its id, fb's is its id shifted by 5% of the rows: the first 5%
// of fa and the last 5% of fb have no partner.
void CreateTables(BenchDb& db, long rows) {
  const std::string n = std::to_string(rows);
  const std::string shift = std::to_string(rows / 20);
  db.Sql("CREATE TABLE fa (id bigint PRIMARY KEY, k bigint, x text NOT NULL)");
  db.Sql("INSERT INTO fa SELECT g, g, 'a' || g FROM generate_series(1, " + n + ") g");
  db.Sql("CREATE TABLE fb (id bigint PRIMARY KEY, k bigint, y text NOT NULL)");
  db.Sql("INSERT INTO fb SELECT g, g + " + shift + ", 'b' || g FROM generate_series(1, " + n +
         ") g");
  db.Sql("CREATE INDEX ON fa (k); CREATE INDEX ON fb (k)");
  db.Sql("VACUUM ANALYZE fa, fb");
}

// Changes `count` rows of `table` (column `payload`) in one transaction per
// kind, as an application would: a quarter each updated, moved to another
// join value, inserted, deleted. `seed` picks other rows each round; ids
// past `rows` are the inserts of earlier rounds.
void Churn(BenchDb& db, const std::string& table, const std::string& payload, long rows, long count,
           long seed) {
  const long quarter = std::max(1L, count / 4);
  const std::string q = std::to_string(quarter);
  const std::string n = std::to_string(rows);
  // `quarter` distinct existing ids, chosen by hashing (g, seed, kind).
  auto pick = [&](int kind) {
    return "SELECT DISTINCT 1 + abs(hashint8(g * 7 + " + std::to_string(seed * 4 + kind) + ")) % " +
           n + " FROM generate_series(1, " + q + ") g";
  };
  db.Sql("UPDATE " + table + " SET " + payload + " = " + payload + " || '+' WHERE id IN (" +
         pick(0) + ")");
  // A new join value elsewhere in the range: its old unit loses the row,
  // the new one gains it (matched to a partner, or a second row of it).
  db.Sql("UPDATE " + table + " SET k = 1 + abs(hashint8(id + " + std::to_string(seed) + ")) % " +
         n + " WHERE id IN (" + pick(1) + ")");
  db.Sql("INSERT INTO " + table + " SELECT " + n + " * (2 + " + std::to_string(seed) +
         ") + g, 1 + abs(hashint8(g - " + std::to_string(seed) + ")) % " + n + ", '" + table +
         " new ' || g FROM generate_series(1, " + q + ") g");
  db.Sql("DELETE FROM " + table + " WHERE id IN (" + pick(2) + ")");
}

struct Level {
  std::vector<double> writes, converged, refreshed, ratios;
};

void Run(const test::ThrowawayCluster& cluster, long rows) {
  const int rounds = kRounds;
  BenchDb db(cluster, "full_join_bench");
  LogSlowStatements(db);
  std::cerr << "loading 2 x " << rows << " rows\n";
  CreateTables(db, rows);
  auto workers = db.StartWorkers();
  db.Apply(std::string("TRANSFORM full_rows") + kJoin + " SELECT a.x, b.y");
  const auto built = Clock::now();
  db.AwaitConverged(1800000);
  const double build_s = Since(built);
  db.Sql(std::string("CREATE MATERIALIZED VIEW full_mv AS SELECT a.x, b.y") + kJoin);
  const std::string target_rows = db.Scalar("SELECT count(*) FROM full_rows");
  std::printf(
      "\n### FULL JOIN of two %ld-row tables vs REFRESH MATERIALIZED VIEW (%d rounds, "
      "medians)\n\n%s target rows, built in %.1f s\n\n"
      "| churn per table | rows changed per table (update/move/insert/delete) | the writes s | "
      "trellis: last commit -> converged s | REFRESH s | REFRESH / trellis | per round |\n"
      "|---|---|---|---|---|---|---|\n",
      rows, rounds, target_rows.c_str(), build_s);
  std::fflush(stdout);
  long seed = 0;
  for (double fraction : {0.001, 0.01}) {
    const long count = static_cast<long>(rows * fraction + 0.5);
    Level level;
    std::string per_round;
    for (int round = 0; round < rounds; ++round, ++seed) {
      db.Sql("VACUUM ANALYZE fa, fb, full_rows");
      const auto first_write = Clock::now();
      Churn(db, "fa", "x", rows, count, seed);
      Churn(db, "fb", "y", rows, count, seed);
      const auto committed = Clock::now();
      level.writes.push_back(Since(first_write));
      db.AwaitConverged(1800000);
      level.converged.push_back(Since(committed));
      level.refreshed.push_back(db.TimeSql("REFRESH MATERIALIZED VIEW full_mv"));
      const std::string wrong = db.Scalar(kDifferences);
      if (wrong != "0") throw BenchError("full_rows differs from the view: " + wrong + " rows");
      level.ratios.push_back(level.refreshed.back() / level.converged.back());
      per_round += (round ? ", " : "") + Fixed(level.ratios.back(), 1) + "x (" +
                   Fixed(level.converged.back() * 1000, 0) + " ms)";
    }
    const long quarter = std::max(1L, count / 4);
    std::printf("| %.1f%% | %ld/%ld/%ld/%ld | %.3f | %.3f | %.3f | %.1fx | %s |\n", fraction * 100,
                quarter, quarter, quarter, quarter, Median(level.writes), Median(level.converged),
                Median(level.refreshed), Median(level.ratios), per_round.c_str());
    std::fflush(stdout);
  }
  std::printf("\nEvery round: the target equal to the view (0 differences).\n");
}

}  // namespace
}  // namespace trellis::bench

int main(int argc, char** argv) {
  return trellis::bench::JoinBenchMain(argc, argv, trellis::bench::Run);
}
