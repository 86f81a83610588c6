// Benchmarks 1 and 2: what capture costs the writer. Both compare two tables
// of identical schema in one database, one plain and one read by a
// projection (so it carries the capture triggers), interleaved round by
// round so that drift in the machine's load hits both alike.
#include <spdlog/spdlog.h>

#include "bench_db.h"
#include "benchmarks.h"
#include "pg/session_settings.h"
#include "pgbench_run.h"
#include "sql/quote.h"
#include "stats.h"

namespace trellis::bench {
namespace {

// Seconds one INSERT ... SELECT of `rows` takes into `table`, from empty.
double TimeBulkInsert(BenchDb& db, const std::string& table, int rows) {
  db.Sql("TRUNCATE " + table);
  // Flush the previous round's dirty pages now, not during the timed statement.
  db.Sql("CHECKPOINT");
  return db.TimeSql("INSERT INTO " + table + " " + BenchRows(rows));
}

std::string PgbenchScript(const std::string& table) {
  return "\\set v random(1, 1000000)\nINSERT INTO " + table + " (id, v, w) VALUES (nextval('" +
         table + "_seq'), :v, 'x');\n";
}

// How long a captured run's leftover backlog may take to drain before the
// benchmark gives up on it and starts the next round from a clean slate.
constexpr int kLagCapMs = 3000;

void DefineCaptured(BenchDb& db, const Config& config) {
  db.Apply("TRANSFORM pg_b_t FROM pg_b SELECT " + config.capture_select);
  auto workers = db.StartWorkers();
  db.AwaitConverged();  // the backfill: the target is live before writes start
}

struct CapturedLeg {
  double tps = 0;
  long backlog = 0;           // keys in pages plus capture rows, when pgbench stopped
  std::optional<double> lag;  // seconds to drain that backlog; unset: over the cap
};

// Production setup for the captured table: staging + 2 drain threads run
// while it is written. A backlog the workers cannot clear within the cap is
// thrown away (PAUSE + DROP + define again) so each round starts alike.
CapturedLeg RunCaptured(BenchDb& db, const Config& config, PgbenchRun run, bool with_workers) {
  std::unique_ptr<BackgroundWorkers> workers;
  if (with_workers) workers = db.StartWorkers();
  run.script = PgbenchScript("pg_b");
  CapturedLeg leg;
  leg.tps = RunPgbench(run).tps;
  const TransformStatus st = db.ReadStatus("pg_b_t");
  leg.backlog = st.backlog_keys + st.capture_backlog;
  if (!workers) workers = db.StartWorkers();
  leg.lag = db.TryAwaitConverged(kLagCapMs);
  workers->Stop();
  if (!leg.lag) {
    db.Apply("PAUSE TRANSFORM pg_b_t");
    db.Apply("DROP TRANSFORM pg_b_t");
    DefineCaptured(db, config);
  }
  return leg;
}

std::string Lag(const std::optional<double>& lag) {
  return lag ? Fixed(*lag, 2) : ">" + Fixed(kLagCapMs / 1000.0, 0);
}

struct PgbenchSeries {
  std::vector<double> plain_tps, capture_tps, capture_ratios, floor_ratios, pinned_ratios;
  std::vector<double> row_ratios;
  std::vector<double> pipeline_tps, pipeline_ratios, backlog, drained_per_s;
  std::string lags;
};

constexpr int kLegs = 6;

// Six legs per round: the plain table; the captured table with the
// workers stopped while pgbench runs (what capture costs the writer; they
// drain the backlog after); the captured table with staging and two drain
// threads running beside pgbench on the same cores (the whole pipeline);
// and a table whose only trigger is an empty statement trigger with a
// transition table (the floor: what any trigger-based capture costs before
// it does anything); and the same empty function declared as capture's
// are for a source whose routed values need the pinned settings (a date,
// say): SECURITY DEFINER with the five SET clauses (what those pins add to
// the floor; this benchmark's own source, grouped by an int, needs none and
// its functions have no SET clause); and a definer function with no SET
// clause that writes one constant row per statement to an unindexed table
// (the floor of any capture that records a statement in a table, before
// it records anything about the rows). The order rotates each round, so no
// leg always goes first.
PgbenchSeries RunPgbenchSeries(BenchDb& db, const Config& config, int clients) {
  PgbenchSeries s;
  PgbenchRun run{config.pgbench, db.url(), "", clients, config.pgbench_seconds, std::nullopt};
  for (int round = 0; round < config.rounds; ++round) {
    double plain = 0;
    double capture = 0;
    double floor_tps = 0;
    double pinned_tps = 0;
    double row_tps = 0;
    CapturedLeg pipeline;
    for (int leg = 0; leg < kLegs; ++leg) {
      switch ((leg + round) % kLegs) {
        case 0:
          run.script = PgbenchScript("pg_a");
          plain = RunPgbench(run).tps;
          break;
        case 1:
          capture = RunCaptured(db, config, run, false).tps;
          break;
        case 2:
          run.script = PgbenchScript("pg_f");
          floor_tps = RunPgbench(run).tps;
          break;
        case 3:
          run.script = PgbenchScript("pg_s");
          pinned_tps = RunPgbench(run).tps;
          break;
        case 4:
          run.script = PgbenchScript("pg_w");
          row_tps = RunPgbench(run).tps;
          break;
        default:
          pipeline = RunCaptured(db, config, run, true);
      }
    }
    spdlog::warn("bench pgbench c={} round {}: plain {:.0f}, capture {:.0f}, pipeline {:.0f} tps",
                 clients, round, plain, capture, pipeline.tps);
    s.plain_tps.push_back(plain);
    s.capture_tps.push_back(capture);
    s.capture_ratios.push_back(plain / capture);
    s.floor_ratios.push_back(plain / floor_tps);
    s.pinned_ratios.push_back(plain / pinned_tps);
    s.row_ratios.push_back(plain / row_tps);
    s.pipeline_tps.push_back(pipeline.tps);
    s.pipeline_ratios.push_back(plain / pipeline.tps);
    s.backlog.push_back(static_cast<double>(pipeline.backlog));
    const double written = pipeline.tps * config.pgbench_seconds;
    s.drained_per_s.push_back((written - pipeline.backlog) / config.pgbench_seconds);
    s.lags += (s.lags.empty() ? "" : ", ") + Lag(pipeline.lag);
  }
  return s;
}

// Both tables get the same index, so only the triggers differ.
void IndexBoth(BenchDb& db, const Config& config, const std::string& a, const std::string& b) {
  if (config.capture_index.empty()) return;
  db.Sql("CREATE INDEX ON " + a + " (" + config.capture_index + "); CREATE INDEX ON " + b + " (" +
         config.capture_index + ")");
}

}  // namespace

Section BulkCapture(const test::ThrowawayCluster& cluster, const Config& config) {
  BenchDb db(cluster, "bench_bulk");
  db.Sql(std::string("CREATE TABLE bulk_a ") + kBenchColumns + "; CREATE TABLE bulk_b " +
         kBenchColumns);
  IndexBoth(db, config, "bulk_a", "bulk_b");
  db.Apply("TRANSFORM bulk_b_t FROM bulk_b SELECT " + config.capture_select);
  // No workers: only the writer's statement is timed, and nothing else runs
  // beside it. One warm-up of each (plan and trigger function caches).
  TimeBulkInsert(db, "bulk_a", config.bulk_rows);
  TimeBulkInsert(db, "bulk_b", config.bulk_rows);
  std::vector<double> plain, captured, ratios;
  for (int round = 0; round < config.rounds; ++round) {
    double a = 0;
    double b = 0;
    if (round % 2 == 0) {
      a = TimeBulkInsert(db, "bulk_a", config.bulk_rows);
      b = TimeBulkInsert(db, "bulk_b", config.bulk_rows);
    } else {
      b = TimeBulkInsert(db, "bulk_b", config.bulk_rows);
      a = TimeBulkInsert(db, "bulk_a", config.bulk_rows);
    }
    plain.push_back(a);
    captured.push_back(b);
    ratios.push_back(b / a);
  }
  const std::string capture_kb =
      db.Scalar("SELECT coalesce(max(pg_column_size(routing)), 0) / 1024 FROM trellis.capture");
  const double ratio = Median(ratios);
  Section s;
  s.title = "1. Capture overhead, bulk";
  s.method = "`INSERT INTO t SELECT g, g % 1000, md5(g::text) FROM generate_series(1, " +
             std::to_string(config.bulk_rows) +
             ")` into an empty table `(id bigint PRIMARY KEY, v int, w text)`: plain (A) vs "
             "read by `TRANSFORM ... SELECT " +
             config.capture_select +
             "`, so carrying the capture triggers (B). TRUNCATE and "
             "CHECKPOINT before each statement; only the INSERT is timed; no workers run. "
             "One warm-up each, then " +
             std::to_string(config.rounds) +
             " rounds, A/B order alternating. Ratio = median of per-round B/A.";
  s.figures.push_back({"captured / plain time", Fixed(ratio, 2) + "x", "<= 1.20x", ratio <= 1.2});
  s.figures.push_back({"plain, median", Fixed(Median(plain), 3) + " s", "", std::nullopt});
  s.figures.push_back({"captured, median", Fixed(Median(captured), 3) + " s", "", std::nullopt});
  s.raw.push_back("plain s: " + List(plain, 3));
  s.raw.push_back("captured s: " + List(captured, 3));
  s.raw.push_back("ratios: " + List(ratios, 2));
  s.raw.push_back("capture row for one statement: " + capture_kb + " kB of routing array");
  return s;
}

Section PgbenchCapture(const test::ThrowawayCluster& cluster, const Config& config) {
  BenchDb db(cluster, "bench_pgbench");
  db.Sql(std::string("CREATE TABLE pg_a ") + kBenchColumns + "; CREATE TABLE pg_b " +
         kBenchColumns + "; CREATE TABLE pg_f " + kBenchColumns + "; CREATE TABLE pg_s " +
         kBenchColumns + "; CREATE TABLE pg_w " + kBenchColumns +
         "; CREATE SEQUENCE pg_a_seq; CREATE SEQUENCE pg_b_seq; CREATE SEQUENCE pg_f_seq; "
         "CREATE SEQUENCE pg_s_seq; CREATE SEQUENCE pg_w_seq");
  IndexBoth(db, config, "pg_a", "pg_b");
  IndexBoth(db, config, "pg_f", "pg_s");
  if (!config.capture_index.empty()) {
    db.Sql("CREATE INDEX ON pg_w (" + config.capture_index + ")");
  }
  db.Sql(
      "CREATE FUNCTION bench_empty_trigger() RETURNS trigger LANGUAGE plpgsql AS "
      "'BEGIN RETURN NULL; END'; CREATE TRIGGER pg_f_floor AFTER INSERT ON pg_f REFERENCING NEW "
      "TABLE AS n FOR EACH STATEMENT EXECUTE FUNCTION bench_empty_trigger()");
  std::string pinned = " SET search_path = pg_catalog, pg_temp";
  for (const pg::PinnedSetting& setting : pg::kTextFormSettings) {
    pinned += " SET " + std::string(setting.name) + " = " + sql::Literal(setting.value);
  }
  db.Sql(
      "CREATE FUNCTION bench_pinned_trigger() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER" +
      pinned +
      " AS 'BEGIN RETURN NULL; END'; CREATE TRIGGER pg_s_floor AFTER INSERT ON pg_s REFERENCING "
      "NEW TABLE AS n FOR EACH STATEMENT EXECUTE FUNCTION bench_pinned_trigger()");
  db.Sql(
      "CREATE TABLE bench_rows (source_id int NOT NULL, xid xid8 NOT NULL DEFAULT "
      "pg_current_xact_id(), op \"char\" NOT NULL); CREATE FUNCTION bench_row_trigger() RETURNS "
      "trigger LANGUAGE plpgsql SECURITY DEFINER AS 'BEGIN INSERT INTO public.bench_rows "
      "(source_id, op) VALUES (1, ''I''); RETURN NULL; END'; CREATE TRIGGER pg_w_floor AFTER "
      "INSERT ON pg_w REFERENCING NEW TABLE AS n FOR EACH STATEMENT EXECUTE FUNCTION "
      "bench_row_trigger()");
  DefineCaptured(db, config);
  Section s;
  s.title = "2. Capture overhead, pgbench";
  s.method =
      "pgbench (`-M prepared`, " + std::to_string(config.pgbench_seconds) +
      " s per run) with the script `INSERT INTO t (id, v, w) VALUES (nextval('t_seq'), :v, "
      "'x')`, autocommit. Six legs per round, order rotating: the plain table; the captured "
      "table with the workers stopped during the run (**capture**: what the triggers cost the "
      "writer; the workers drain the backlog after the run); the captured table with staging + 2 "
      "drain threads running beside pgbench on the same 2 cores (**pipeline**); a table whose "
      "only trigger is an empty statement trigger with a transition table (**floor**: what any "
      "trigger-based capture costs a write before doing anything); the same empty function "
      "declared as capture's are for a source whose routed values need pinned settings "
      "(SECURITY DEFINER with five SET clauses; the benchmark's own int-keyed source needs "
      "none); a definer function with no SET clause that inserts one constant row per "
      "statement into an unindexed table (**one row written**: the floor of any capture that "
      "records each statement in a table). After each "
      "captured run the backlog (keys in pages + capture rows) is given " +
      Fixed(kLagCapMs / 1000.0, 0) +
      " s to drain outside the measurement; a backlog still there is thrown away (PAUSE, DROP, "
      "define again) so every round starts clean. " +
      std::to_string(config.rounds) +
      " rounds per client count. Ratio = median of per-round plain TPS / captured TPS. Read the "
      "one-client pipeline figure with care: on this VM an idle CPU halts and waking it costs "
      "tens of microseconds at every round trip, and the pipeline leg's workers keep the other "
      "CPU awake, which has made that leg faster than the plain table.";
  for (int clients : {1, 4}) {
    PgbenchSeries r = RunPgbenchSeries(db, config, clients);
    const double capture = Median(r.capture_ratios);
    const double pipeline = Median(r.pipeline_ratios);
    const std::string c = std::to_string(clients) + " client" + (clients > 1 ? "s" : "");
    s.figures.push_back({c + ": capture, plain / captured TPS", Fixed(capture, 2) + "x", "<= 1.15x",
                         capture <= 1.15});
    s.figures.push_back({c + ": pipeline, plain / captured TPS", Fixed(pipeline, 2) + "x",
                         "(reference)", std::nullopt});
    s.figures.push_back({c + ": floor, plain / empty-trigger TPS",
                         Fixed(Median(r.floor_ratios), 2) + "x", "(reference)", std::nullopt});
    s.figures.push_back({c + ": floor with SECURITY DEFINER and the pinned settings",
                         Fixed(Median(r.pinned_ratios), 2) + "x", "(reference)", std::nullopt});
    s.figures.push_back({c + ": floor with one row written per statement",
                         Fixed(Median(r.row_ratios), 2) + "x", "(reference)", std::nullopt});
    s.figures.push_back({c + ": TPS plain / capture / pipeline, medians",
                         Fixed(Median(r.plain_tps), 0) + " / " + Fixed(Median(r.capture_tps), 0) +
                             " / " + Fixed(Median(r.pipeline_tps), 0),
                         "", std::nullopt});
    s.figures.push_back({c + ": pipeline, keys drained per s during the run, median",
                         Fixed(Median(r.drained_per_s), 0), "", std::nullopt});
    s.raw.push_back(c + ": plain tps: " + List(r.plain_tps, 0));
    s.raw.push_back(c + ": capture tps: " + List(r.capture_tps, 0) +
                    "; ratios: " + List(r.capture_ratios, 2));
    s.raw.push_back(c + ": floor ratios: " + List(r.floor_ratios, 2) +
                    "; with SECURITY DEFINER and the pinned settings: " + List(r.pinned_ratios, 2) +
                    "; one row written: " + List(r.row_ratios, 2));
    s.raw.push_back(c + ": pipeline tps: " + List(r.pipeline_tps, 0) +
                    "; ratios: " + List(r.pipeline_ratios, 2));
    s.raw.push_back(c + ": pipeline backlog when pgbench stopped (keys): " + List(r.backlog, 0) +
                    "; seconds to drain it: " + r.lags);
  }
  return s;
}

}  // namespace trellis::bench
