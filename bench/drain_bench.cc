// Benchmark 4: drain throughput. One UPDATE dirties every key of a live
// projection while the workers are stopped, so the whole backlog is waiting
// when they start; the clock runs from their start to convergence, split
// into staging (capture buffer empty) and drain (every page applied).
#include <chrono>
#include <thread>

#include "bench_db.h"
#include "benchmarks.h"
#include "stats.h"

namespace trellis::bench {
namespace {

using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

struct DrainRound {
  double update_s, staged_s, converged_s;
};

DrainRound RunRound(BenchDb& db) {
  DrainRound r{};
  r.update_s = db.TimeSql("UPDATE drain_src SET v = v + 1");
  // Same starting point each round: no dead tuples from the last one.
  db.Sql("VACUUM drain_src");
  db.Sql("VACUUM drain_t");
  db.Sql("CHECKPOINT");
  const auto start = Clock::now();
  auto workers = db.StartWorkers();
  while (db.Scalar("SELECT count(*) FROM trellis.capture") != "0") {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  r.staged_s = Since(start);
  db.AwaitConverged();
  r.converged_s = Since(start);
  workers->Stop();
  return r;
}

}  // namespace

Section DrainThroughput(const test::ThrowawayCluster& cluster, const Config& config) {
  BenchDb db(cluster, "bench_drain");
  const std::string n = std::to_string(config.drain_rows);
  db.CreateFilledTable("drain_src", config.drain_rows);
  db.Apply("TRANSFORM drain_t FROM drain_src SELECT v * 2 AS v2, upper(w) AS w_up, v % 7 AS m7");
  {
    auto workers = db.StartWorkers();
    db.AwaitConverged();
  }
  std::vector<double> rates, staged, drained, updates;
  for (int round = 0; round < config.drain_rounds; ++round) {
    DrainRound r = RunRound(db);
    rates.push_back(config.drain_rows / r.converged_s);
    staged.push_back(r.staged_s);
    drained.push_back(r.converged_s - r.staged_s);
    updates.push_back(r.update_s);
  }
  const long diffs = std::stol(
      db.Scalar("SELECT count(*) FROM ((SELECT id, v * 2, upper(w), v % 7 FROM drain_src EXCEPT "
                "SELECT * FROM drain_t) UNION ALL (SELECT * FROM drain_t EXCEPT SELECT id, v * 2, "
                "upper(w), v % 7 FROM drain_src)) d"));
  const double rate = Median(rates);
  Section s;
  s.title = "4. Drain throughput";
  s.method = "A live projection (3 expressions) over " + n +
             " rows; workers stopped; one `UPDATE drain_src SET v = v + 1` (" + n +
             " dirty keys, one capture row); then staging + 2 drain threads start and the "
             "clock runs until await_converged returns. " +
             std::to_string(config.drain_rounds) + " rounds, median.";
  s.figures.push_back({"keys/s", Fixed(rate, 0), ">= 50000", rate >= 50000});
  s.figures.push_back({"staging / drain time, medians",
                       Fixed(Median(staged), 2) + " s / " + Fixed(Median(drained), 2) + " s", "",
                       std::nullopt});
  s.raw.push_back("keys/s: " + List(rates, 0));
  s.raw.push_back("staging s: " + List(staged, 2) + "; drain s: " + List(drained, 2));
  s.raw.push_back("the UPDATE itself (captured) s: " + List(updates, 2));
  s.raw.push_back("target rows differing from the definition afterwards: " + std::to_string(diffs));
  return s;
}

}  // namespace trellis::bench
