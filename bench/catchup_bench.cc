// Benchmark 9: catch-up throughput by capture mode (issue 28). A backlog of
// catchup_rows changed keys is written while the workers are stopped; then
// staging and the drain threads start and the clock runs until
// await_converged returns. Logical decoding and triggers are measured in
// the same run, on one cluster (wal_level = logical, durable commits), over
// a projection and a GROUP BY target.
#include <spdlog/spdlog.h>

#include <chrono>
#include <map>
#include <thread>

#include "bench_db.h"
#include "benchmarks.h"
#include "stats.h"

namespace trellis::bench {
namespace {

using CatchupClock = std::chrono::steady_clock;

constexpr const char* kCatchupModes[] = {"triggers", "logical"};
// The backlog is written by this many UPDATE statements, each its own
// transaction over a range of ids: one capture row each in trigger mode,
// one decoded transaction each in logical mode.
constexpr int kBacklogStatements = 10;

struct CatchupShape {
  const char* name;       // the figures' label
  const char* source;     // the table
  const char* transform;  // its definition
};

constexpr CatchupShape kCatchupShapes[] = {
    {"projection", "cu_proj",
     "TRANSFORM cu_proj_t FROM cu_proj SELECT v * 2 AS v2, upper(w) AS w_up"},
    // Every UPDATE moves its rows to the next group: a group loses and gains
    // rows, so the old values travel too (REPLICA IDENTITY FULL, set by define).
    {"GROUP BY", "cu_group",
     "TRANSFORM cu_group_t FROM cu_group SELECT v, count(*) AS n, sum(id) AS id_sum GROUP BY v"},
};

double CatchupSince(CatchupClock::time_point t) {
  return std::chrono::duration<double>(CatchupClock::now() - t).count();
}

struct CatchupRound {
  double write_s = 0;   // the backlog's UPDATEs
  double staged_s = 0;  // workers started -> every backlog change staged
  double total_s = 0;   // workers started -> await_converged returned
};

// Seconds-long, so polled at 5 ms: true once every change written before
// `lsn` is staged (logical: the catalog's staged position reached it;
// triggers: no capture row left).
bool BacklogStaged(BenchDb& db, const std::string& mode, const std::string& lsn) {
  if (mode == "logical") {
    return db.Scalar("SELECT coalesce(staged_lsn >= '" + lsn +
                     "'::pg_lsn, false) FROM trellis.capture_feed") == "t";
  }
  return db.Scalar("SELECT count(*) FROM trellis.capture") == "0";
}

CatchupRound RunCatchup(BenchDb& db, const std::string& mode, const CatchupShape& shape,
                        long rows) {
  const std::string table = shape.source;
  {
    // Untimed: whatever is left (the slot also holds the WAL other legs
    // wrote meanwhile, which it must read past) is taken in first.
    auto workers = db.StartWorkers();
    db.AwaitConverged(600000);
  }
  CatchupRound r;
  const long per = (rows + kBacklogStatements - 1) / kBacklogStatements;
  const auto write_start = CatchupClock::now();
  for (long from = 1; from <= rows; from += per) {
    db.Sql("UPDATE " + table + " SET v = v + 1 WHERE id BETWEEN " + std::to_string(from) + " AND " +
           std::to_string(std::min(rows, from + per - 1)));
  }
  r.write_s = CatchupSince(write_start);
  const std::string lsn = db.Scalar("SELECT pg_current_wal_insert_lsn()::text");
  // The same starting point each round (benchmark 4 does the same).
  db.Sql("VACUUM " + table);
  db.Sql("VACUUM " + table + "_t");
  db.Sql("CHECKPOINT");
  const auto start = CatchupClock::now();
  auto workers = db.StartWorkers();
  while (!BacklogStaged(db, mode, lsn)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  r.staged_s = CatchupSince(start);
  db.AwaitConverged(1800000);
  r.total_s = CatchupSince(start);
  workers->Stop();
  return r;
}

struct CatchupSeries {
  std::vector<double> rates, staged, drained, writes;
};

}  // namespace

Section CatchupThroughput(const Config& config) {
  test::ThrowawayCluster cluster(TRELLIS_TESTKIT_BINARY, {"--logical", "--durable"});
  const long rows = config.catchup_rows;
  std::map<std::string, std::unique_ptr<BenchDb>> dbs;
  for (const char* mode : kCatchupModes) {
    auto db = std::make_unique<BenchDb>(cluster, std::string("bench_catchup_") + mode, mode);
    for (const CatchupShape& shape : kCatchupShapes) {
      db->CreateFilledTable(shape.source, rows);
      db->Apply(shape.transform);
    }
    {
      auto workers = db->StartWorkers();
      db->AwaitConverged(1800000);
    }
    dbs[mode] = std::move(db);
    spdlog::warn("bench 9: {} database ready", mode);
  }

  // Per round, every (shape, mode) leg; the modes alternate which goes first.
  std::map<std::string, CatchupSeries> series;  // "shape mode"
  for (int round = 0; round < config.catchup_rounds; ++round) {
    for (const CatchupShape& shape : kCatchupShapes) {
      for (int i = 0; i < 2; ++i) {
        const std::string mode = kCatchupModes[(i + round) % 2];
        const CatchupRound r = RunCatchup(*dbs[mode], mode, shape, rows);
        CatchupSeries& s = series[std::string(shape.name) + " " + mode];
        s.rates.push_back(rows / r.total_s);
        s.staged.push_back(r.staged_s);
        s.drained.push_back(r.total_s - r.staged_s);
        s.writes.push_back(r.write_s);
        spdlog::warn("bench 9 round {}: {} {}: {:.0f} keys/s (staged {:.2f} s, total {:.2f} s)",
                     round, shape.name, mode, rows / r.total_s, r.staged_s, r.total_s);
      }
    }
  }

  // Every target equals its definition afterwards (the figures mean nothing
  // otherwise).
  std::vector<std::string> diffs;
  for (const char* mode : kCatchupModes) {
    BenchDb& db = *dbs[mode];
    diffs.push_back(
        std::string(mode) + " projection " +
        db.Scalar("SELECT count(*) FROM ((SELECT id, v * 2, upper(w) FROM cu_proj EXCEPT SELECT * "
                  "FROM cu_proj_t) UNION ALL (SELECT * FROM cu_proj_t EXCEPT SELECT id, v * 2, "
                  "upper(w) FROM cu_proj)) d") +
        ", GROUP BY " +
        db.Scalar("SELECT count(*) FROM ((SELECT v, count(*), sum(id) FROM cu_group GROUP BY v "
                  "EXCEPT SELECT v, n, id_sum FROM cu_group_t) UNION ALL (SELECT v, n, id_sum "
                  "FROM cu_group_t EXCEPT SELECT v, count(*), sum(id) FROM cu_group GROUP BY v)) "
                  "d"));
  }
  dbs.clear();

  Section s;
  s.title = "9. Catch-up throughput, logical decoding against triggers";
  s.method =
      "One testkit cluster with --logical --durable, two databases whose catalogs capture by "
      "triggers and by logical decoding, each with two sources of " +
      std::to_string(rows) +
      " rows: a projection (`SELECT v * 2 AS v2, upper(w) AS w_up`) and a GROUP BY target "
      "(`SELECT v, count(*) AS n, sum(id) AS id_sum GROUP BY v`, 1000 groups). Per leg: the "
      "workers take in what is left (untimed), stop; " +
      std::to_string(kBacklogStatements) +
      " `UPDATE ... SET v = v + 1` statements over id ranges change every row (each its own "
      "transaction); VACUUM and CHECKPOINT; then staging + 2 drain threads start and the clock "
      "runs until await_converged returns (staged: until the backlog is staged, the capture "
      "table empty or the slot's staged position past the backlog). keys/s = rows / that "
      "time. " +
      std::to_string(config.catchup_rounds) +
      " rounds, every (shape, mode) leg in each, the modes alternating which goes first; "
      "medians.";
  for (const CatchupShape& shape : kCatchupShapes) {
    const CatchupSeries& l = series[std::string(shape.name) + " logical"];
    const CatchupSeries& t = series[std::string(shape.name) + " triggers"];
    const double lr = Median(l.rates);
    const double tr = Median(t.rates);
    const std::string n = shape.name;
    s.figures.push_back({n + ": keys/s, logical", Fixed(lr, 0), "", std::nullopt});
    s.figures.push_back({n + ": keys/s, triggers", Fixed(tr, 0), "", std::nullopt});
    s.figures.push_back(
        {n + ": logical / triggers keys/s", Fixed(lr / tr, 2) + "x", ">= 1.00x", lr >= tr});
    for (const auto& [mode, ser] : {std::pair{"logical", &l}, std::pair{"triggers", &t}}) {
      s.raw.push_back(n + " " + mode + ": keys/s " + List(ser->rates, 0) + "; staged s " +
                      List(ser->staged, 2) + "; drained after s " + List(ser->drained, 2) +
                      "; the backlog's UPDATEs s " + List(ser->writes, 2));
    }
  }
  for (const std::string& d : diffs) {
    s.raw.push_back("target rows differing from the definition afterwards, " + d);
  }
  return s;
}

}  // namespace trellis::bench
