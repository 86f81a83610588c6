// Benchmark 3: how long a committed write takes to show up in its target
// under a steady, paced write load, with the workers running as in
// production. Both ends are read from the server's clock: the source row's
// `written_at` (clock_timestamp() at insert, just before the writer's
// autocommit) and a deferred constraint trigger on the target, which fires
// at the drain transaction's commit.
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "bench_db.h"
#include "freshness_run.h"
#include "stats.h"

namespace trellis::bench {
namespace {

constexpr const char* kSetup = R"sql(
CREATE TABLE fresh (id bigserial PRIMARY KEY, v int NOT NULL,
                    written_at timestamptz NOT NULL DEFAULT clock_timestamp());
CREATE TABLE fresh_seen (id bigint PRIMARY KEY, latency interval NOT NULL))sql";

// The dimension the join shapes read: one row per group, unique on id.
constexpr const char* kDimension = R"sql(
CREATE TABLE fresh_dim (id int PRIMARY KEY, label text NOT NULL);
INSERT INTO fresh_dim SELECT g, 'dim ' || g FROM generate_series(0, %GROUPS%) g;
ANALYZE fresh_dim)sql";

// First sighting only: a key drained twice keeps its first latency.
constexpr const char* kSeenTrigger = R"sql(
CREATE FUNCTION fresh_seen_fn() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO fresh_seen VALUES (NEW.id, clock_timestamp() - NEW.written_at)
  ON CONFLICT DO NOTHING;
  RETURN NULL;
END $$;)sql";

// Over a GROUP BY target (every shape but the projection) a target row is a group
// whose max(written_at) says up to which write it has caught up: every
// benchmark write of the group written no later than that is visible. (Two
// writes of one group committing in the other order within a fraction of a
// millisecond could be counted one drain early; with 2 000 writes/s over
// thousands of groups that almost never happens.) Prefilled rows are older
// than the run and never counted.
constexpr const char* kGroupSeenTrigger = R"sql(
CREATE FUNCTION fresh_seen_fn() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO fresh_seen
  SELECT id, clock_timestamp() - written_at FROM fresh
  WHERE v = NEW.v AND written_at <= NEW.written_at AND written_at > '2001-01-01'
  ON CONFLICT DO NOTHING;
  RETURN NULL;
END $$;)sql";

constexpr const char* kSeenConstraint = R"sql(
CREATE CONSTRAINT TRIGGER fresh_seen AFTER INSERT OR UPDATE ON fresh_t
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION fresh_seen_fn())sql";

// Latency of every written row: its first sighting in the target, or, for a
// row not there yet, the time it has waited so far (a lower bound).
constexpr const char* kLatencies = R"sql(
CREATE TEMPORARY TABLE fresh_ms AS
SELECT f.written_at, s.id IS NULL AS pending,
       extract(epoch FROM coalesce(s.latency, clock_timestamp() - f.written_at)) * 1000 AS ms
FROM fresh f LEFT JOIN fresh_seen s USING (id) WHERE f.written_at > '2001-01-01')sql";

constexpr const char* kPercentiles = R"sql(
SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY ms), percentile_cont(0.9) WITHIN GROUP (ORDER BY ms),
       percentile_cont(0.99) WITHIN GROUP (ORDER BY ms), max(ms), count(*),
       count(*) FILTER (WHERE pending)
FROM fresh_ms)sql";

// p50 of the rows written in the first and in the last second: a backlog
// that grows while the writer runs shows up as a rising latency.
constexpr const char* kDrift = R"sql(
WITH b AS (SELECT min(written_at) AS t0, max(written_at) AS t1 FROM fresh_ms)
SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) FILTER (WHERE written_at < t0 + interval '1 s'),
       percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) FILTER (WHERE written_at > t1 - interval '1 s')
FROM fresh_ms, b)sql";

// How long the tail may take to drain once the writer stops.
constexpr int kTailCapMs = 10000;

// Waits for every write so far to reach every target; names the state of
// `transform` when 300 s pass first.
void AwaitBuilt(BenchDb& db, const std::string& transform) {
  if (db.TryAwaitConverged(300000)) return;
  const TransformStatus st = db.ReadStatus(transform);
  throw BenchError(transform + " not built within 300 s: " + st.status + " with " +
                   std::to_string(st.backlog_keys) + " keys and " +
                   std::to_string(st.capture_backlog) + " capture rows behind");
}

// Defines the shape's transforms; the last one's target is fresh_t.
void DefineShape(BenchDb& db, FreshShape shape, const std::string& groups) {
  if (shape == FreshShape::kGroupOverJoin || shape == FreshShape::kChain ||
      shape == FreshShape::kCompiled) {
    std::string dim = kDimension;
    dim.replace(dim.find("%GROUPS%"), 8, std::to_string(std::stol(groups) - 1));
    db.Sql(dim);
  }
  switch (shape) {
    case FreshShape::kProjection:
      db.Apply("TRANSFORM fresh_t FROM fresh SELECT written_at AS written_at, v AS v");
      return;
    case FreshShape::kGroup:
      db.Apply(
          "TRANSFORM fresh_t FROM fresh SELECT v, count(*) AS n, max(written_at) AS written_at "
          "GROUP BY v");
      return;
    case FreshShape::kGroupOverJoin:
      // Grouped by the written table's v and the dimension's label (one per
      // v), with the same aggregates as the one-stage GROUP BY, so that the
      // shapes differ in their stages only: define adds the hidden join
      // stage and indexes its target on the group key and max's argument,
      // as the one-stage source is indexed on (v, written_at).
      db.Apply(
          "TRANSFORM fresh_t FROM fresh f JOIN fresh_dim d ON f.v = d.id SELECT f.v AS v, "
          "d.label AS label, count(*) AS n, max(f.written_at) AS written_at GROUP BY f.v, "
          "d.label");
      return;
    case FreshShape::kCompiled:
      // One statement the engine compiles into three stages (a hidden join,
      // a hidden grouping over it, the user's projection over that with
      // the HAVING as its WHERE: spec/grammar.md), with the grouped join's
      // groups and aggregates, so it differs from it by one stage. The
      // HAVING holds for every group.
      db.Apply(
          "TRANSFORM fresh_t FROM fresh f JOIN fresh_dim d ON f.v = d.id SELECT f.v AS v, "
          "d.label AS label, count(*) AS n, max(f.written_at) AS written_at GROUP BY f.v, "
          "d.label HAVING count(*) > 0");
      return;
    case FreshShape::kChain:
      // Defined back to back: each link waits for the one it reads to be
      // built, and no link drains the build of the one before it again
      // (bench/README.md, "Stages and FULL JOIN").
      db.Apply("TRANSFORM fresh_p FROM fresh SELECT v AS v, written_at AS written_at");
      db.Apply(
          "TRANSFORM fresh_j FROM fresh_p p JOIN fresh_dim d ON p.v = d.id SELECT p.v AS v, "
          "p.written_at AS written_at, d.label AS label");
      // Still needed: the grouping recomputes a group's max from its rows
      // found by the group and written_at (as the grouped join's hidden
      // stage and the one-stage source are indexed), and nothing indexes a
      // chained target's non-key columns for it; without it every drain of
      // fresh_t reads all of fresh_j. Made on the empty target, before its
      // build appends. The grouping is the grouped join's.
      db.Sql("CREATE INDEX ON fresh_j (v, label, written_at)");
      db.Apply(
          "TRANSFORM fresh_t FROM fresh_j SELECT v, label, count(*) AS n, max(written_at) AS "
          "written_at GROUP BY v, label");
      return;
  }
}

}  // namespace

std::string Describe(FreshShape shape) {
  switch (shape) {
    case FreshShape::kProjection:
      return "one stage: a projection of the written table";
    case FreshShape::kGroup:
      return "one stage: a GROUP BY v of the written table";
    case FreshShape::kGroupOverJoin:
      return "two stages: a GROUP BY v over a JOIN of the written table to a dimension";
    case FreshShape::kChain:
      return "three transforms chained: a projection, its JOIN to a dimension, a GROUP BY v of "
             "that";
    case FreshShape::kCompiled:
      return "one transform compiled into three stages: a GROUP BY v over a JOIN to a "
             "dimension, with a HAVING";
  }
  return "?";
}

FreshnessRun MeasureFreshness(const test::ThrowawayCluster& cluster, const Config& config,
                              FreshShape shape, const std::string& database) {
  BenchDb db(cluster, database, config.capture_mode);
  db.Sql(kSetup);
  const bool grouped = shape != FreshShape::kProjection;
  const std::string groups = std::to_string(config.fresh_groups);
  if (config.fresh_prefill > 0 && config.fresh_groups > 0) {
    // The prefill is dated 2000, before any write of the run.
    db.Sql("INSERT INTO fresh (v, written_at) SELECT g % " + groups +
           ", '2000-01-01' FROM generate_series(1, " + std::to_string(config.fresh_prefill) +
           ") g; CREATE INDEX ON fresh (v, written_at)");
    db.Sql("VACUUM ANALYZE fresh");
  }
  if (const char* ms = std::getenv("FRESH_BENCH_LOG_MS")) {
    // Diagnosis: the server logs every statement slower than this (the
    // workers' sessions, opened from here on, included).
    db.Sql(std::string("ALTER SYSTEM SET log_min_duration_statement = ") + ms);
    db.Scalar("SELECT pg_reload_conf()");
  }
  auto workers = db.StartWorkers();
  DefineShape(db, shape, groups);
  db.Sql(std::string(grouped ? kGroupSeenTrigger : kSeenTrigger) + ";" + kSeenConstraint);
  AwaitBuilt(db, "fresh_t");  // the target is live before writes start

  // Two clients so one slow round trip does not hold back the schedule.
  PgbenchRun run{config.pgbench,
                 db.url(),
                 config.fresh_groups > 0
                     ? "\\set v random(0, " + std::to_string(config.fresh_groups - 1) +
                           ")\nINSERT INTO fresh (v) VALUES (:v);\n"
                     : "\\set v random(1, 1000000)\nINSERT INTO fresh (v) VALUES (:v);\n",
                 2,
                 config.fresh_seconds,
                 config.fresh_rate};
  FreshnessRun out;
  out.pgbench = RunPgbench(run);
  out.at_stop = db.ReadStatus("fresh_t");
  out.tail_seconds = db.TryAwaitConverged(kTailCapMs);
  workers->Stop();

  if (const char* out_file = std::getenv("FRESH_BENCH_SERVER_LOG")) {
    // The server's log so far, appended (the testkit removes its directory).
    const std::string log =
        db.Scalar("SELECT pg_read_file(current_setting('data_directory') || '/../postgres.log')");
    if (std::FILE* f = std::fopen(out_file, "w")) {
      std::fwrite(log.data(), 1, log.size(), f);
      std::fclose(f);
    }
  }
  db.Sql(kLatencies);
  auto rows = db.conn().Query(kPercentiles);
  if (!rows.ok() || rows->size() != 1) throw BenchError("percentiles: " + rows.status().ToString());
  if (rows->text(0, 4) == "0") throw BenchError("nothing was written");
  out.p50 = std::stod(rows->text(0, 0));
  out.p90 = std::stod(rows->text(0, 1));
  out.p99 = std::stod(rows->text(0, 2));
  out.max = std::stod(rows->text(0, 3));
  out.written = std::stol(rows->text(0, 4));
  out.pending = std::stol(rows->text(0, 5));
  auto drift = db.conn().Query(kDrift);
  if (!drift.ok()) throw BenchError("drift: " + drift.status().ToString());
  // NULL (no row in that second) reads as NaN rather than failing.
  auto num = [](const std::string& text) { return text.empty() ? std::nan("") : std::stod(text); };
  out.first_second_p50 = num(drift->text(0, 0));
  out.last_second_p50 = num(drift->text(0, 1));
  return out;
}

Section Freshness(const test::ThrowawayCluster& cluster, const Config& config) {
  const FreshnessRun r = MeasureFreshness(
      cluster, config, config.fresh_groups > 0 ? FreshShape::kGroup : FreshShape::kProjection,
      "bench_fresh");
  // A percentile that includes rows still pending is only a lower bound.
  const std::string bound = r.pending > 0 ? ">= " : "";

  Section s;
  s.title = "3. Freshness";
  s.method = "pgbench `-R " + std::to_string(config.fresh_rate) + " -c 2 -T " +
             std::to_string(config.fresh_seconds) +
             "` inserting single rows (autocommit) into a source whose projection copies "
             "`written_at` (DEFAULT clock_timestamp()); staging + 2 drain threads running. A "
             "deferred constraint trigger on the target records clock_timestamp() - "
             "written_at when the drain commits: commit -> visible, on the server's clock. "
             "After the writer stops the tail gets " +
             Fixed(kTailCapMs / 1000.0, 0) +
             " s; a row still not visible then counts with the time it has waited so far, and "
             "the percentiles are marked >= (lower bounds).";
  s.figures.push_back(
      {"p50 commit -> visible", bound + Fixed(r.p50, 1) + " ms", "<= 50 ms", r.p50 <= 50});
  s.figures.push_back(
      {"p99 commit -> visible", bound + Fixed(r.p99, 1) + " ms", "<= 250 ms", r.p99 <= 250});
  s.figures.push_back({"write rate achieved", Fixed(r.pgbench.tps, 0) + " /s", "", std::nullopt});
  s.raw.push_back("p90 " + bound + Fixed(r.p90, 1) + " ms, max " + bound + Fixed(r.max, 1) +
                  " ms; p50 of the first second's writes " + Fixed(r.first_second_p50, 1) +
                  " ms, of the last second's " + Fixed(r.last_second_p50, 1) + " ms");
  s.raw.push_back("rows written " + std::to_string(r.written) + ", not visible at the end " +
                  std::to_string(r.pending) + "; backlog when the writer stopped " +
                  std::to_string(r.at_stop.backlog_keys) + " keys in " +
                  std::to_string(r.at_stop.backlog_pages) + " pages + " +
                  std::to_string(r.at_stop.capture_backlog) + " capture rows; tail drained in " +
                  (r.tail_seconds ? Fixed(*r.tail_seconds, 2) + " s" : "more than the cap") +
                  "; writer latency avg " + Fixed(r.pgbench.latency_ms, 2) + " ms");
  return s;
}

}  // namespace trellis::bench
