// The batch paths and their chooser (spec/engine.md "Batch paths";
// drain/path_chooser.h): a transform driven step by step (staging batch,
// drains) through small batches, a 10% batch and a bulk COPY takes delta or
// recompute for the small ones and a rebuild for the large ones, status
// says which, and the target equals its query after each; a rebuild keeps
// the target (OID, grants, indexes, views); a row that fails during a
// rebuild is narrowed to its key; the chooser's pure estimates.
#include <catch2/catch.hpp>

#include <chrono>
#include <future>
#include <limits>
#include <thread>

#include "build_steps.h"
#include "drain/path_chooser.h"
#include "engine_fixture.h"
#include "pipeline_steps.h"
#include "staging/stage_batch.h"
#include "trellis/workers.h"

namespace trellis::test {
namespace {

using drain::BatchFacts;
using drain::ChoosePath;
using drain::EstimatedUs;
using plan::BatchPath;

// 20,000 orders in 100 groups.
constexpr const char* kOrders = R"sql(
CREATE TABLE orders (id bigint PRIMARY KEY, g int, amount int NOT NULL);
INSERT INTO orders SELECT i, i % 100, i % 1000 FROM generate_series(1, 20000) i;
)sql";
constexpr const char* kTotals =
    "TRANSFORM totals FROM orders SELECT g, count(*) AS n, sum(amount) AS total GROUP BY g";
constexpr const char* kTotalsQuery = "SELECT g, count(*), sum(amount) FROM orders GROUP BY g";
constexpr const char* kDoubled = "TRANSFORM doubled FROM orders SELECT amount * 2 AS twice";
constexpr const char* kDoubledQuery = "SELECT id, amount * 2 FROM orders";

// The path of the transform's last batch, as status reports it.
std::string LastPath(Session& s, const std::string& name) {
  auto st = s.ReadStatus(name);
  REQUIRE(st.ok());
  return st->last_batch ? st->last_batch->path : "";
}

// Stages every captured change there is. A bulk write of `whole_floor`
// row versions or more may be staged whole.
void StageAll(pg::Connection& conn, long whole_floor = plan::kWholeFloorVersions) {
  for (;;) {
    auto staged = staging::StageBatch(conn, "trellis", 1000, 1000, whole_floor);
    REQUIRE(staged.ok());
    if (staged->consumed == 0) break;
  }
}

// Stages every captured change there is, then drains every page.
void StageAllAndDrain(pg::Connection& conn, long whole_floor = plan::kWholeFloorVersions) {
  StageAll(conn, whole_floor);
  DrainAllPages(conn);
}

// `totals` and `doubled` over kOrders, both built.
std::unique_ptr<Session> DefineTotalsAndDoubled(EngineFixture& f) {
  auto s = DefineBuilt(f, kOrders, kTotals);
  REQUIRE(s->Apply(kDoubled, true).ok());
  auto workers = BackgroundWorkers::Start(f.Options(), true, 1);
  f.AwaitConverged(*s);
  return s;
}

// A fresh history: the model alone decides the next batch (the measured
// factors of earlier batches, timed on a loaded test machine, would make
// the expected path depend on that machine).
void ForgetCosts(EngineFixture& f) { f.Sql("DELETE FROM trellis.batch_paths"); }

BatchFacts Facts(long keys, long backlog, long target) {
  BatchFacts facts;
  facts.keys = keys;
  facts.backlog_keys = backlog;
  facts.target_rows = target;
  return facts;
}

}  // namespace

TEST_CASE("the chooser rebuilds when a batch is a large part of the target", "[chooser]") {
  // Recompute: 3000 + 25 us a key; rebuild: 3000 + 1 us a target row (+ 0.3 an
  // input row: none here).
  CHECK(ChoosePath(Facts(1, 1, 100000)).path == BatchPath::kRecompute);
  CHECK(ChoosePath(Facts(2000, 2000, 100000)).path == BatchPath::kRecompute);
  CHECK(ChoosePath(Facts(2000, 20000, 100000)).path == BatchPath::kRebuild);
  // The backlog counts: a claim of 2,000 of 20,000 keys is a tenth of what
  // a rebuild completes.
  const auto choice = ChoosePath(Facts(2000, 20000, 100000));
  CHECK(choice.reason ==
        "rebuild 103.0 ms < recompute 530.0 ms (2000 of 20000 backlog keys, 100000 target rows, 0 "
        "input rows)");

  // Deltas: 3000 + 5 us a delta row or key; a GROUP BY is offered no
  // recompute.
  BatchFacts groups = Facts(10, 10, 1000);
  groups.offers_deltas = true;
  groups.delta_rows = 20;
  CHECK(ChoosePath(groups).path == BatchPath::kDelta);
  groups.delta_rows = 2000;
  CHECK(ChoosePath(groups).path == BatchPath::kRebuild);
  // A group's rebuild reads its source: 100,000 rows make it 30 ms.
  groups.input_rows = 100000;
  CHECK(ChoosePath(groups).path == BatchPath::kDelta);

  SECTION("a measured factor moves the choice, and fades with age") {
    BatchFacts facts = Facts(2000, 20000, 100000);
    facts.rebuild = drain::PathHistory{true, 6.0, 0, false};  // rebuilds cost 6x the model
    CHECK(ChoosePath(facts).path == BatchPath::kRecompute);
    facts.rebuild.age_seconds = 4 * plan::kFactorHalfLifeSeconds;  // 1 + 5/16
    CHECK(ChoosePath(facts).path == BatchPath::kRebuild);
  }
  SECTION("a slow fixed cost is not charged to a batch's rows") {
    // A 0.1% UPDATE of 200,000 orders in 2,000 groups: 191 keys, 191 delta
    // rows, against a rebuild of 2,000 target rows over 200,000 orders.
    BatchFacts facts = Facts(191, 191, 2000);
    facts.offers_deltas = true;
    facts.delta_rows = 191;
    facts.input_rows = 200000;
    // Small delta batches took 14 times the model's fixed cost.
    facts.delta.fixed_measured = true;
    facts.delta.fixed_factor = 14;
    CHECK(EstimatedUs(BatchPath::kDelta, facts) == Approx(3000 * 14 + 5 * 382));
    CHECK(ChoosePath(facts).path == BatchPath::kDelta);
    // One factor over both figures (as before the two were apart) made
    // the same batch 68.7 ms, and chose the 65 ms rebuild.
    CHECK((3000 + 5 * 382) * 14 > EstimatedUs(BatchPath::kRebuild, facts));
    // Rows that cost more than modelled still count.
    facts.delta.measured = true;
    facts.delta.factor = 20;
    CHECK(ChoosePath(facts).path == BatchPath::kRebuild);
  }
  SECTION("a rebuild that failed recently is not chosen") {
    BatchFacts facts = Facts(20000, 20000, 20000);
    facts.rebuild.failed_recently = true;
    const auto chosen = ChoosePath(facts);
    CHECK(chosen.path == BatchPath::kRecompute);
    CHECK(chosen.reason.find("a rebuild failed") == 0);
  }
}

TEST_CASE("small batches go by deltas or recompute, a 10% batch and a COPY by a rebuild",
          "[engine][chooser]") {
  EngineFixture f;
  auto s = DefineTotalsAndDoubled(f);
  auto conn = ConnectBuilder(f);
  auto check_both = [&] {
    CHECK(SelectDifferences(f, "SELECT g, n, total FROM totals", kTotalsQuery) == 0);
    CHECK(SelectDifferences(f, "SELECT id, twice FROM doubled", kDoubledQuery) == 0);
  };

  // Small batches: a few rows.
  for (int round = 0; round < 3; ++round) {
    ForgetCosts(f);
    f.Sql("UPDATE orders SET amount = amount + 1 WHERE id IN (" + std::to_string(round + 1) +
          ", 5000, 17000)");
    StageAllAndDrain(*conn);
    CHECK(LastPath(*s, "totals") == "delta");
    CHECK(LastPath(*s, "doubled") == "recompute");
    // A batch of 3 keys says how much the fixed cost is, not the rows.
    CHECK(f.Scalar("SELECT string_agg(path || ' ' || batches || ' ' || fixed_batches, ',' ORDER "
                   "BY path) FROM trellis.batch_paths") == "delta 1 1,recompute 1 1");
    check_both();
  }
  auto st = s->ReadStatus("doubled");
  REQUIRE(st.ok());
  REQUIRE(st->last_batch);
  CHECK(st->last_batch->rows == 3);
  CHECK(st->last_batch->ms > 0);
  CHECK(st->last_batch->reason.find("recompute") == 0);
  REQUIRE(st->path_costs.size() == 1);
  CHECK(st->path_costs[0].path == "recompute");
  CHECK(st->path_costs[0].us_per_row > 0);

  // A tenth of the rows.
  ForgetCosts(f);
  f.Sql("UPDATE orders SET amount = amount + 1 WHERE id % 10 = 0");
  StageAllAndDrain(*conn);
  CHECK(LastPath(*s, "totals") == "rebuild");
  CHECK(LastPath(*s, "doubled") == "rebuild");
  check_both();
  // The rebuild completed every page: none is left for a second drain.
  CHECK(f.Scalar("SELECT count(*) FROM trellis.pages") == "0");

  // A bulk load: 30,000 rows by COPY.
  ForgetCosts(f);
  f.Sql(
      "COPY orders FROM PROGRAM 'seq 20001 50000 | awk ''{print $1\",\"$1%100\",\"$1%997}''' "
      "WITH (FORMAT csv)");
  StageAllAndDrain(*conn);
  CHECK(LastPath(*s, "totals") == "rebuild");
  CHECK(LastPath(*s, "doubled") == "rebuild");
  check_both();
  CHECK(f.Scalar("SELECT count(*) FROM doubled") == "50000");

  // Small again, with the rebuild's history: one row goes by its key.
  f.Sql("DELETE FROM orders WHERE id = 7");
  StageAllAndDrain(*conn);
  CHECK(LastPath(*s, "totals") == "delta");
  CHECK(LastPath(*s, "doubled") == "recompute");
  check_both();
}

TEST_CASE("a rebuild keeps the target's OID, grants, indexes and the views on it",
          "[engine][chooser]") {
  EngineFixture f;
  auto s = DefineBuilt(f, kOrders, kDoubled);
  f.Sql("CREATE ROLE doubled_reader");
  f.Sql("GRANT SELECT ON doubled TO doubled_reader");
  f.Sql("CREATE INDEX doubled_twice ON doubled (twice)");
  f.Sql("CREATE VIEW doubled_big AS SELECT id, twice FROM doubled WHERE twice > 1000");
  const std::string oid = f.Scalar("SELECT 'doubled'::regclass::oid::text");
  auto conn = ConnectBuilder(f);

  ForgetCosts(f);
  f.Sql("UPDATE orders SET amount = amount + 3");
  StageAllAndDrain(*conn);
  CHECK(LastPath(*s, "doubled") == "rebuild");
  CHECK(SelectDifferences(f, "SELECT id, twice FROM doubled", kDoubledQuery) == 0);
  CHECK(f.Scalar("SELECT 'doubled'::regclass::oid::text") == oid);
  CHECK(f.Scalar("SELECT has_table_privilege('doubled_reader', 'doubled', 'SELECT')") == "t");
  CHECK(f.Scalar("SELECT count(*) FROM pg_indexes WHERE indexname = 'doubled_twice'") == "1");
  CHECK(SelectDifferences(f, "SELECT * FROM doubled_big",
                          "SELECT id, amount * 2 FROM orders WHERE amount * 2 > 1000") == 0);
}

// `unit_prices` (100 / qty) over 5000 stock rows, built.
std::unique_ptr<Session> DefineUnitPrices(EngineFixture& f) {
  return DefineBuilt(f,
                     "CREATE TABLE stock (id int PRIMARY KEY, qty int NOT NULL); INSERT INTO "
                     "stock SELECT g, 1 + g % 7 FROM generate_series(1, 5000) g;",
                     "TRANSFORM unit_prices FROM stock SELECT qty AS qty, 100 / qty AS unit");
}

// With no costs learned yet, every stock row changes and one of them (id
// 2500) can no longer be computed: a rebuild of the whole target fails on
// it.
void BreakOneUnitPrice(EngineFixture& f) {
  ForgetCosts(f);
  f.Sql("UPDATE stock SET qty = CASE WHEN id = 2500 THEN 0 ELSE qty + 1 END");
}

// BreakOneUnitPrice, staged: its 10,000 row versions make one whole page,
// which lists no keys.
void StageBrokenPricesWhole(EngineFixture& f, pg::Connection& conn) {
  BreakOneUnitPrice(f);
  StageAll(conn);
  REQUIRE(f.Scalar("SELECT count(*) FILTER (WHERE whole) || '/' || count(*) FROM trellis.pages") ==
          "1/1");
}

// The failure was narrowed to the one key, recorded in the column's
// quarantine, and every other row arrived.
void CheckOnlyTheBrokenPriceQuarantined(EngineFixture& f) {
  CHECK(f.Scalar("SELECT string_agg(key::text, ',') FROM trellis.quarantined_rows") == "{2500}");
  CHECK(f.Differences("unit_prices",
                      "SELECT id, qty, CASE WHEN qty <> 0 THEN 100 / qty END FROM stock") == 0);
}

TEST_CASE("a row that fails during a rebuild is narrowed to its key; the rest arrives",
          "[engine][chooser]") {
  EngineFixture f;
  auto s = DefineUnitPrices(f);
  auto conn = ConnectBuilder(f);
  // Staged key by key (never whole), so the chooser picks the rebuild.
  BreakOneUnitPrice(f);
  StageAllAndDrain(*conn, std::numeric_limits<long>::max());
  // The rebuild failed: the batch went by its keys, which narrowed the
  // failure to the one key, recorded in the column's quarantine.
  auto st = s->ReadStatus("unit_prices");
  REQUIRE(st.ok());
  REQUIRE(st->last_batch);
  CHECK(st->last_batch->path == "recompute");
  CHECK(st->last_batch->reason.find("a rebuild failed") == 0);
  bool rebuild_failed = false;
  for (const auto& c : st->path_costs) {
    if (c.path == "rebuild") rebuild_failed = c.failed_at_us.has_value();
  }
  CHECK(rebuild_failed);
  CheckOnlyTheBrokenPriceQuarantined(f);
  CHECK(f.Scalar("SELECT count(*) FROM trellis.pages") == "0");
}

TEST_CASE("a bulk write staged whole whose rebuild fails is built again by ranges",
          "[engine][chooser][whole]") {
  EngineFixture f;
  auto s = DefineUnitPrices(f);
  auto conn = ConnectBuilder(f);
  StageBrokenPricesWhole(f, *conn);
  DrainAllPages(*conn);
  // Its rebuild failed and listed no keys to narrow to: the target is
  // queued for a rebuild job, and the page is done.
  auto st = s->ReadStatus("unit_prices");
  REQUIRE(st.ok());
  REQUIRE(st->last_batch);
  CHECK(st->last_batch->reason.find("a rebuild failed, the target is built again by ranges") == 0);
  CHECK(f.Scalar("SELECT count(*) FROM trellis.pages") == "0");
  CHECK(f.Scalar("SELECT count(*) FROM trellis.jobs WHERE kind = 'rebuild'") == "1");
  // The job's ranges narrow the failure to the one key; the rest arrives.
  {
    auto workers = BackgroundWorkers::Start(f.Options(), true, 1);
    f.AwaitConverged(*s);
  }
  CheckOnlyTheBrokenPriceQuarantined(f);
}

TEST_CASE("await_converged waits for the rebuild job a failed rebuild left for its pages",
          "[engine][chooser][whole]") {
  EngineFixture f;
  auto s = DefineUnitPrices(f);
  auto conn = ConnectBuilder(f);
  StageBrokenPricesWhole(f, *conn);
  // A wait that has seen everything staged and waits for the page: then
  // the page's rebuild fails and hands the work to a rebuild job in the
  // transaction that completes the page. No worker runs the job, so the
  // write is not in the target, and the wait must not say it is.
  auto token = s->WatermarkToken();
  REQUIRE(token.ok());
  auto waited = std::async(std::launch::async, [&] {
    return s->AwaitConverged(token.value(), std::chrono::milliseconds(3000));
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  DrainAllPages(*conn);
  REQUIRE(f.Scalar("SELECT count(*) FROM trellis.jobs WHERE kind = 'rebuild'") == "1");
  auto converged = waited.get();
  REQUIRE(converged.ok());
  CHECK_FALSE(converged.value());
  // Once the job has run, the same token converges.
  {
    auto workers = BackgroundWorkers::Start(f.Options(), true, 1);
    auto again = s->AwaitConverged(token.value(), std::chrono::milliseconds(30000));
    REQUIRE(again.ok());
    CHECK(again.value());
  }
  CheckOnlyTheBrokenPriceQuarantined(f);
}

TEST_CASE("a bulk write is staged as one whole page and drained by one rebuild",
          "[engine][chooser][whole]") {
  EngineFixture f;
  auto s = DefineTotalsAndDoubled(f);
  auto conn = ConnectBuilder(f);
  ForgetCosts(f);
  // 20,000 orders updated: 40,000 row versions, against rebuilds of 100
  // and 20,000 target rows.
  f.Sql("UPDATE orders SET amount = amount + 1");
  auto staged = staging::StageBatch(*conn, "trellis", 1000, 1000);
  REQUIRE(staged.ok());
  CHECK(f.Scalar("SELECT count(*) || '/' || sum(key_count) FROM trellis.pages WHERE whole") ==
        "2/80000");
  CHECK(f.Scalar("SELECT count(*) FROM trellis.pages WHERE NOT whole") == "0");
  CHECK(f.Scalar("SELECT count(*) FROM trellis.delta_rows") == "0");
  DrainAllPages(*conn);
  CHECK(LastPath(*s, "totals") == "rebuild");
  CHECK(LastPath(*s, "doubled") == "rebuild");
  CHECK(s->ReadStatus("totals")->last_batch->reason.find("a bulk write staged whole") == 0);
  CHECK(f.Scalar("SELECT count(*) FROM trellis.pages") == "0");
  CHECK(SelectDifferences(f, "SELECT g, n, total FROM totals", kTotalsQuery) == 0);
  CHECK(SelectDifferences(f, "SELECT id, twice FROM doubled", kDoubledQuery) == 0);

  // Below the floor the same transforms stage keys.
  f.Sql("UPDATE orders SET amount = amount + 1 WHERE id <= 300");
  staged = staging::StageBatch(*conn, "trellis", 1000, 1000);
  REQUIRE(staged.ok());
  CHECK(f.Scalar("SELECT count(*) FROM trellis.pages WHERE whole") == "0");
  DrainAllPages(*conn);
  CHECK(SelectDifferences(f, "SELECT g, n, total FROM totals", kTotalsQuery) == 0);
  CHECK(SelectDifferences(f, "SELECT id, twice FROM doubled", kDoubledQuery) == 0);

  // A TRUNCATE and a reload in one transaction: whole, whatever the size.
  f.Sql(
      "BEGIN; TRUNCATE orders; INSERT INTO orders SELECT i, i % 10, i FROM "
      "generate_series(1, 50) i; COMMIT");
  staged = staging::StageBatch(*conn, "trellis", 1000, 1000);
  REQUIRE(staged.ok());
  CHECK(f.Scalar("SELECT count(*) FROM trellis.pages WHERE whole") == "2");
  CHECK(f.Scalar("SELECT count(*) FROM trellis.jobs") == "0");
  DrainAllPages(*conn);
  CHECK(SelectDifferences(f, "SELECT g, n, total FROM totals", kTotalsQuery) == 0);
  CHECK(SelectDifferences(f, "SELECT id, twice FROM doubled", kDoubledQuery) == 0);
}

TEST_CASE("a drain killed in the middle of a rebuild leaves its pages; the next converges",
          "[engine][chooser]") {
  EngineFixture f;
  auto s = DefineBuilt(f, kOrders, kDoubled);
  ForgetCosts(f);
  f.Sql("UPDATE orders SET amount = amount + 5");
  // The target locked against writes: the rebuild, once started, waits.
  auto blocker = ConnectBuilder(f);
  REQUIRE(blocker->Exec("BEGIN").ok());
  REQUIRE(blocker->Exec("LOCK TABLE doubled IN SHARE MODE").ok());
  {
    auto workers = BackgroundWorkers::Start(f.Options(), true, 1);
    // The drain's backend waits on the lock inside its rebuild: end it, as
    // a crash of the drain would (the transaction is rolled back).
    std::string killed = "0";
    for (int i = 0; i < 300 && killed == "0"; ++i) {
      killed = f.Scalar(
          "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
          "WHERE wait_event_type = 'Lock' AND query LIKE '%WITH __trellis_fresh AS%'");
      if (killed == "0") std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    CHECK(killed == "1");
    CHECK(f.Scalar("SELECT count(*) > 0 FROM trellis.pages") == "t");
    REQUIRE(blocker->Exec("COMMIT").ok());
    f.AwaitConverged(*s);
  }
  CHECK(SelectDifferences(f, "SELECT id, twice FROM doubled", kDoubledQuery) == 0);
  CHECK(LastPath(*s, "doubled") == "rebuild");
}

}  // namespace trellis::test
