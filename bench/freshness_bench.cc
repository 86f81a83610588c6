// Benchmark 3: how long a committed write takes to show up in its target
// under a steady, paced write load, with the workers running as in
// production. Both ends are read from the server's clock: the source row's
// `written_at` (clock_timestamp() at insert, just before the writer's
// autocommit) and a deferred constraint trigger on the target, which fires
// at the drain transaction's commit.
#include "bench_db.h"
#include "benchmarks.h"
#include "pgbench_run.h"
#include "stats.h"

namespace trellis::bench {
namespace {

constexpr const char* kSetup = R"sql(
CREATE TABLE fresh (id bigserial PRIMARY KEY, v int NOT NULL,
                    written_at timestamptz NOT NULL DEFAULT clock_timestamp());
CREATE TABLE fresh_seen (id bigint PRIMARY KEY, latency interval NOT NULL))sql";

// First sighting only: a key drained twice keeps its first latency.
constexpr const char* kSeenTrigger = R"sql(
CREATE FUNCTION fresh_seen_fn() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO fresh_seen VALUES (NEW.id, clock_timestamp() - NEW.written_at)
  ON CONFLICT DO NOTHING;
  RETURN NULL;
END $$;
CREATE CONSTRAINT TRIGGER fresh_seen AFTER INSERT OR UPDATE ON fresh_t
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION fresh_seen_fn())sql";

constexpr const char* kPercentiles = R"sql(
SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY ms), percentile_cont(0.9) WITHIN GROUP (ORDER BY ms),
       percentile_cont(0.99) WITHIN GROUP (ORDER BY ms), max(ms), count(*)
FROM (SELECT extract(epoch FROM latency) * 1000 AS ms FROM fresh_seen) s)sql";

}  // namespace

Section Freshness(const test::ThrowawayCluster& cluster, const Config& config) {
  BenchDb db(cluster, "bench_fresh");
  db.Sql(kSetup);
  db.Apply("TRANSFORM fresh_t FROM fresh SELECT written_at AS written_at, v AS v");
  db.Sql(kSeenTrigger);
  auto workers = db.StartWorkers();
  db.AwaitConverged();  // the (empty) backfill: the target is live before writes start

  // Two clients so one slow round trip does not hold back the schedule.
  PgbenchRun run{config.pgbench,
                 db.url(),
                 "\\set v random(1, 1000000)\nINSERT INTO fresh (v) VALUES (:v);\n",
                 2,
                 config.fresh_seconds,
                 config.fresh_rate};
  PgbenchResult written = RunPgbench(run);
  const double tail = db.AwaitConverged();
  workers->Stop();

  auto rows = db.conn().Query(kPercentiles);
  if (!rows.ok() || rows->size() != 1) throw BenchError("percentiles: " + rows.status().ToString());
  if (rows->text(0, 4) == "0") throw BenchError("no write reached the target");
  const std::vector<double> p = {std::stod(rows->text(0, 0)), std::stod(rows->text(0, 1)),
                                 std::stod(rows->text(0, 2))};
  const double max_ms = std::stod(rows->text(0, 3));
  const long seen = std::stol(rows->text(0, 4));
  const long total = std::stol(db.Scalar("SELECT count(*) FROM fresh"));

  Section s;
  s.title = "3. Freshness";
  s.method = "pgbench `-R " + std::to_string(config.fresh_rate) + " -c 2 -T " +
             std::to_string(config.fresh_seconds) +
             "` inserting single rows (autocommit) into a source whose projection copies "
             "`written_at` (DEFAULT clock_timestamp()); staging + 2 drain threads running. A "
             "deferred constraint trigger on the target records clock_timestamp() - "
             "written_at when the drain commits: commit -> visible, on the server's clock.";
  s.figures.push_back(
      {"p50 commit -> visible", Fixed(p.at(0), 1) + " ms", "<= 50 ms", p.at(0) <= 50});
  s.figures.push_back(
      {"p99 commit -> visible", Fixed(p.at(2), 1) + " ms", "<= 250 ms", p.at(2) <= 250});
  s.figures.push_back({"write rate achieved", Fixed(written.tps, 0) + " /s", "", std::nullopt});
  s.raw.push_back("p90 " + Fixed(p.at(1), 1) + " ms, max " + Fixed(max_ms, 1) + " ms");
  s.raw.push_back("rows written " + std::to_string(total) + ", seen in target " +
                  std::to_string(seen) + "; writer latency avg " + Fixed(written.latency_ms, 2) +
                  " ms; drain tail after the writer stopped " + Fixed(tail, 2) + " s");
  return s;
}

}  // namespace trellis::bench
