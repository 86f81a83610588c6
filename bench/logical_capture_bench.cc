// Benchmark 8: capture by logical decoding beside trigger capture (issue 28),
// in one run on one cluster with wal_level = logical and durable commits.
// Two databases, one catalog in each mode, each with a plain table and a
// captured one of the same schema, so every ratio is plain / captured within
// one mode, measured interleaved with the other mode's in the same rounds.
#include <spdlog/spdlog.h>

#include <map>

#include "bench_db.h"
#include "benchmarks.h"
#include "freshness_run.h"
#include "pgbench_run.h"
#include "stats.h"

namespace trellis::bench {
namespace {

constexpr const char* kModes[] = {"triggers", "logical"};
// Rows the UPDATE tables hold; the script updates one at random.
constexpr long kUpdateRows = 100000;

std::string InsertScript(const std::string& table) {
  return "\\set v random(1, 1000000)\nINSERT INTO " + table + " (id, v, w) VALUES (nextval('" +
         table + "_seq'), :v, 'x');\n";
}

std::string UpdateScript(const std::string& table) {
  return "\\set id random(1, " + std::to_string(kUpdateRows) + ")\n\\set v random(1, 1000000)\n" +
         "UPDATE " + table + " SET v = :v WHERE id = :id;\n";
}

// One mode's database: ins_plain/ins_cap for INSERTs, upd_plain/upd_cap
// (prefilled) for UPDATEs, bulk_plain/bulk_cap for the bulk INSERT.
std::unique_ptr<BenchDb> Prepare(const test::ThrowawayCluster& cluster, const Config& config,
                                 const std::string& mode) {
  auto db = std::make_unique<BenchDb>(cluster, "bench_capture_" + mode, mode);
  for (const char* t : {"ins_plain", "ins_cap", "bulk_plain", "bulk_cap"}) {
    db->Sql(std::string("CREATE TABLE ") + t + " " + kBenchColumns + "; CREATE SEQUENCE " + t +
            "_seq");
  }
  db->CreateFilledTable("upd_plain", kUpdateRows);
  db->CreateFilledTable("upd_cap", kUpdateRows);
  for (const char* t : {"ins_cap", "upd_cap", "bulk_cap"}) {
    db->Apply(std::string("TRANSFORM ") + t + "_t FROM " + t + " SELECT " + config.capture_select);
  }
  auto workers = db->StartWorkers();
  db->AwaitConverged();
  return db;
}

// Seconds one INSERT ... SELECT of `rows` takes into `table`, from empty.
double TimeBulkInsert(BenchDb& db, const std::string& table, int rows) {
  db.Sql("TRUNCATE " + table);
  db.Sql("CHECKPOINT");
  return db.TimeSql("INSERT INTO " + table + " " + BenchRows(rows));
}

// Lets the workers take in what the timed legs wrote (not timed), so every
// round starts with no backlog and the slot holds little WAL.
void CatchUp(BenchDb& db) {
  auto workers = db.StartWorkers();
  db.AwaitConverged(300000);
}

struct Series {
  std::vector<double> plain, captured, ratios;
};

}  // namespace

Section LogicalCapture(const Config& config) {
  test::ThrowawayCluster cluster(TRELLIS_TESTKIT_BINARY, {"--logical", "--durable"});
  std::map<std::string, std::unique_ptr<BenchDb>> dbs;
  for (const char* mode : kModes) dbs[mode] = Prepare(cluster, config, mode);

  // Writer cost: per round, every (mode, table pair) leg in rotating order,
  // workers stopped while pgbench runs (what capture costs the writer).
  struct Leg {
    std::string mode, kind;
    int clients;
  };
  std::vector<Leg> legs;
  for (const char* kind : {"INSERT", "UPDATE"}) {
    for (int clients : {1, 4}) {
      for (const char* mode : kModes) legs.push_back({mode, kind, clients});
    }
  }
  std::map<std::string, Series> series;  // "mode kind clients"
  const int pgbench_rounds = config.logical_bulk_only ? 0 : config.rounds;
  for (int round = 0; round < pgbench_rounds; ++round) {
    for (size_t i = 0; i < legs.size(); ++i) {
      const Leg& leg = legs[(i + round) % legs.size()];
      BenchDb& db = *dbs[leg.mode];
      const bool insert = leg.kind == "INSERT";
      PgbenchRun run{config.pgbench,         db.url(),    "", leg.clients,
                     config.pgbench_seconds, std::nullopt};
      // Plain and captured alternate which goes first, round by round.
      double plain = 0;
      double captured = 0;
      for (int side = 0; side < 2; ++side) {
        const bool plain_side = (side + round) % 2 == 0;
        const std::string table =
            std::string(insert ? "ins_" : "upd_") + (plain_side ? "plain" : "cap");
        run.script = insert ? InsertScript(table) : UpdateScript(table);
        (plain_side ? plain : captured) = RunPgbench(run).tps;
      }
      Series& s = series[leg.mode + " " + leg.kind + " " + std::to_string(leg.clients)];
      s.plain.push_back(plain);
      s.captured.push_back(captured);
      s.ratios.push_back(plain / captured);
      spdlog::warn("bench 8 round {}: {} {} c={}: plain {:.0f}, captured {:.0f} tps", round,
                   leg.mode, leg.kind, leg.clients, plain, captured);
    }
    for (const char* mode : kModes) CatchUp(*dbs[mode]);
  }

  // Bulk INSERT, no workers: plain and captured alternating, each mode.
  std::map<std::string, Series> bulk;
  for (int round = 0; round < config.rounds; ++round) {
    for (const char* mode : kModes) {
      BenchDb& db = *dbs[mode];
      double a = 0;
      double b = 0;
      if (round % 2 == 0) {
        a = TimeBulkInsert(db, "bulk_plain", config.bulk_rows);
        b = TimeBulkInsert(db, "bulk_cap", config.bulk_rows);
      } else {
        b = TimeBulkInsert(db, "bulk_cap", config.bulk_rows);
        a = TimeBulkInsert(db, "bulk_plain", config.bulk_rows);
      }
      bulk[mode].plain.push_back(a);
      bulk[mode].captured.push_back(b);
      bulk[mode].ratios.push_back(b / a);
    }
    for (const char* mode : kModes) CatchUp(*dbs[mode]);
  }
  dbs.clear();  // their workers and sessions end before freshness starts its own

  // Freshness (benchmark 3's method), triggers then logical.
  std::map<std::string, FreshnessRun> fresh;
  for (const char* mode : kModes) {
    if (config.logical_bulk_only) break;
    Config c = config;
    c.capture_mode = mode;
    fresh[mode] =
        MeasureFreshness(cluster, c, FreshShape::kProjection, std::string("bench_fresh_") + mode);
  }

  Section s;
  s.title = "8. Capture by logical decoding beside triggers";
  s.method =
      "One testkit cluster with --logical --durable (wal_level = logical; fsync, "
      "synchronous_commit and full_page_writes on), two databases whose catalogs capture by "
      "triggers and by logical decoding, each with a plain table and a captured one (`TRANSFORM "
      "... SELECT " +
      config.capture_select + "`). Writer cost: pgbench `-M prepared`, " +
      std::to_string(config.pgbench_seconds) +
      " s per run, single-row autocommit INSERT (`nextval`) and UPDATE (a random row of " +
      std::to_string(kUpdateRows) +
      "), 1 and 4 clients, workers stopped during the runs (they catch up after each round); "
      "every (mode, statement, clients) leg in each round, in rotating order, plain and "
      "captured alternating which goes first. Bulk: `INSERT ... SELECT` of " +
      std::to_string(config.bulk_rows) +
      " rows into an empty table, TRUNCATE and CHECKPOINT before each, no workers. Ratios: "
      "median of per-round plain TPS / captured TPS (bulk: captured time / plain time). "
      "Freshness: benchmark 3 (pgbench -R " +
      std::to_string(config.fresh_rate) + ", " + std::to_string(config.fresh_seconds) +
      " s, a projection, staging + 2 drain threads) in a new database of each mode. " +
      std::to_string(config.rounds) + " rounds.";
  const double bulk_logical = Median(bulk["logical"].ratios);
  s.figures.push_back({"bulk INSERT: logical, captured / plain time", Fixed(bulk_logical, 3) + "x",
                       "<= 1.02x", bulk_logical <= 1.02});
  s.figures.push_back({"bulk INSERT: triggers, captured / plain time",
                       Fixed(Median(bulk["triggers"].ratios), 3) + "x", "(beside it)",
                       std::nullopt});
  for (const char* mode : kModes) {
    s.raw.push_back(std::string("bulk ") + mode + ": plain s " + List(bulk[mode].plain, 3) +
                    "; captured s " + List(bulk[mode].captured, 3) + "; ratios " +
                    List(bulk[mode].ratios, 3));
  }
  if (config.logical_bulk_only) {
    s.method = "The bulk legs of benchmark 8 alone (--logical-legs bulk): " + s.method;
    return s;
  }
  for (const char* kind : {"INSERT", "UPDATE"}) {
    for (int clients : {1, 4}) {
      const std::string c =
          std::string(kind) + ", " + std::to_string(clients) + " client" + (clients > 1 ? "s" : "");
      const Series& logical =
          series[std::string("logical ") + kind + " " + std::to_string(clients)];
      const Series& triggers =
          series[std::string("triggers ") + kind + " " + std::to_string(clients)];
      const double l = Median(logical.ratios);
      s.figures.push_back(
          {c + ": logical, plain / captured TPS", Fixed(l, 3) + "x", "<= 1.02x", l <= 1.02});
      s.figures.push_back({c + ": triggers, plain / captured TPS",
                           Fixed(Median(triggers.ratios), 3) + "x", "(beside it)", std::nullopt});
      s.raw.push_back(c + ": logical plain tps " + List(logical.plain, 0) + "; captured " +
                      List(logical.captured, 0) + "; ratios " + List(logical.ratios, 3));
      s.raw.push_back(c + ": triggers plain tps " + List(triggers.plain, 0) + "; captured " +
                      List(triggers.captured, 0) + "; ratios " + List(triggers.ratios, 3));
    }
  }
  const FreshnessRun& ft = fresh["triggers"];
  const FreshnessRun& fl = fresh["logical"];
  const std::string bound_t = ft.pending > 0 ? ">= " : "";
  const std::string bound_l = fl.pending > 0 ? ">= " : "";
  s.figures.push_back({"freshness p50, logical / triggers", Fixed(fl.p50 / ft.p50, 2) + "x",
                       "<= 1.5x", fl.p50 / ft.p50 <= 1.5});
  s.figures.push_back(
      {"freshness p99, logical", bound_l + Fixed(fl.p99, 1) + " ms", "<= 250 ms", fl.p99 <= 250});
  s.figures.push_back({"freshness p50 / p99, triggers",
                       bound_t + Fixed(ft.p50, 1) + " / " + Fixed(ft.p99, 1) + " ms", "",
                       std::nullopt});
  s.figures.push_back({"freshness p50 / p99, logical",
                       bound_l + Fixed(fl.p50, 1) + " / " + Fixed(fl.p99, 1) + " ms", "",
                       std::nullopt});
  for (const char* mode : kModes) {
    const FreshnessRun& r = fresh[mode];
    s.raw.push_back(std::string("freshness ") + mode + ": rate " + Fixed(r.pgbench.tps, 0) +
                    "/s, rows " + std::to_string(r.written) + ", not visible at the end " +
                    std::to_string(r.pending) + ", p90 " + Fixed(r.p90, 1) + " ms, max " +
                    Fixed(r.max, 1) + " ms, first/last second p50 " + Fixed(r.first_second_p50, 1) +
                    " / " + Fixed(r.last_second_p50, 1) + " ms");
  }
  return s;
}

}  // namespace trellis::bench
