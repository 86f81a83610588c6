// A drain whose target another transform reads stages its own writes for
// that reader in its transaction (staging::StageOwnWrites), and then drains
// the reader's pages there too (drain/follow_through.h): a write goes
// through every stage in one commit, and nothing is left for a staging
// batch or a next drain. A reader's pages the drain cannot take free are
// left committed for the next drain. When the staging fails, the writes
// are left to the staging worker and the drain still commits.
#include <catch2/catch.hpp>

#include "drain/charging.h"
#include "drain/drain_page.h"
#include "drain/unit_executor.h"
#include "engine_fixture.h"
#include "pipeline_steps.h"
#include "staging/stage_batch.h"
#include "trellis/workers.h"
#include "workers/locks.h"

using trellis::test::EngineFixture;

namespace {

constexpr const char* kItems = R"sql(
CREATE TABLE items (id int PRIMARY KEY, price int NOT NULL);
INSERT INTO items SELECT g, g FROM generate_series(1, 300) g;
)sql";

const trellis::drain::StageOwnWritesFn kStageOwnWrites =
    [](trellis::pg::Connection& conn, const std::string& schema,
       const trellis::catalog::Transform& drained) {
      return trellis::staging::StageOwnWrites(conn, schema, drained, 1000);
    };

// Defines `statements` in order and builds them with workers that stop
// before returning, so the test runs every later step itself.
std::unique_ptr<trellis::Session> DefineBuiltChain(EngineFixture& f,
                                                   std::initializer_list<const char*> statements) {
  f.Sql(kItems);
  auto s = f.OpenSession();
  for (const char* statement : statements) REQUIRE(s->Apply(statement, true).ok());
  auto workers = trellis::BackgroundWorkers::Start(f.Options(), true, 1);
  f.AwaitConverged(*s);
  return s;
}

// One drain of the oldest claimable pages, staging its own writes as the
// workers' drains do.
trellis::drain::PageResult DrainOnce(EngineFixture& f) {
  auto hook = trellis::drain::MakeChargingHook();
  trellis::drain::UnitExecutor executor(*hook);
  auto drained = trellis::drain::DrainPages(f.conn(), "trellis", {}, executor, kStageOwnWrites);
  REQUIRE(drained.ok());
  return drained.value();
}

std::string PagesOf(EngineFixture& f, const char* name) {
  return f.Scalar(
      std::string("SELECT count(*) FROM trellis.pages p JOIN trellis.transforms t ON t.id = "
                  "p.transform_id WHERE t.target_name = '") +
      name + "'");
}

}  // namespace

TEST_CASE("a drain takes its writes through every stage that reads them in one transaction",
          "[stage_own_writes]") {
  EngineFixture f;
  auto s = DefineBuiltChain(f, {"TRANSFORM up FROM items SELECT price * 2 AS p2",
                                "TRANSFORM mid FROM up SELECT p2 + 1 AS p3 WHERE p2 % 3 <> 0",
                                "TRANSFORM down FROM mid SELECT p3 % 7 AS r, count(*) AS n "
                                "GROUP BY p3 % 7"});
  f.Sql("UPDATE items SET price = price + 1 WHERE id <= 50");
  trellis::test::StageStep(f.conn());
  REQUIRE(PagesOf(f, "up") != "0");
  REQUIRE(PagesOf(f, "mid") == "0");

  const auto drained = DrainOnce(f);
  CHECK(drained.outcome == trellis::drain::PageOutcome::kDrained);
  CHECK(drained.read_by_others);
  CHECK(drained.staged_own_writes > 0);
  // mid's pages, then down's, drained in the same commit.
  CHECK(drained.followed_claims == 2);
  CHECK(drained.followed_pages >= 2);
  for (const char* name : {"up", "mid", "down"}) CHECK(PagesOf(f, name) == "0");
  CHECK(f.Scalar("SELECT count(*) FROM trellis.capture") == "0");
  CHECK(DrainOnce(f).outcome == trellis::drain::PageOutcome::kNone);
  CHECK(f.Differences("mid", "SELECT id, price * 2 + 1 FROM items WHERE (price * 2) % 3 <> 0") ==
        0);
  CHECK(trellis::test::SelectDifferences(f, "SELECT r, n FROM down",
                                         "SELECT (price * 2 + 1) % 7, count(*) FROM items "
                                         "WHERE (price * 2) % 3 <> 0 GROUP BY 1") == 0);
}

TEST_CASE("a drain does not follow into a reader of two inputs; the next drain takes its pages",
          "[stage_own_writes]") {
  EngineFixture f;
  f.Sql(
      "CREATE TABLE owners (id int PRIMARY KEY, name text NOT NULL); "
      "INSERT INTO owners SELECT g, 'o' || g FROM generate_series(0, 9) g;");
  // `named` joins up's target to owners: an owner's rename is staged by
  // looking up's rows up, which must be committed first.
  auto s = DefineBuiltChain(f, {"TRANSFORM up FROM items SELECT price * 2 AS p2, id % 10 AS owner",
                                "TRANSFORM named FROM up u JOIN owners o ON u.owner = o.id "
                                "SELECT u.p2 AS p2, o.name AS name"});
  f.Sql("UPDATE items SET price = price + 1 WHERE id <= 50");
  trellis::test::StageStep(f.conn());

  const auto drained = DrainOnce(f);
  CHECK(drained.outcome == trellis::drain::PageOutcome::kDrained);
  CHECK(drained.staged_own_writes > 0);
  CHECK(drained.followed_claims == 0);
  CHECK(PagesOf(f, "up") == "0");
  CHECK(PagesOf(f, "named") != "0");
  for (;;) {
    const auto next = DrainOnce(f);
    REQUIRE(next.outcome != trellis::drain::PageOutcome::kFailed);
    if (next.outcome == trellis::drain::PageOutcome::kNone) break;
  }
  CHECK(trellis::test::SelectDifferences(f, "SELECT p2, name FROM named",
                                         "SELECT i.price * 2, o.name FROM items i "
                                         "JOIN owners o ON o.id = i.id % 10") == 0);
}

TEST_CASE("a reader's pages a drain cannot take free commit with its writes for the next drain",
          "[stage_own_writes]") {
  EngineFixture f;
  auto s = DefineBuiltChain(f, {"TRANSFORM up FROM items SELECT price * 2 AS p2",
                                "TRANSFORM down FROM up SELECT p2 + 1 AS p3 WHERE p2 % 3 <> 0"});
  f.Sql("UPDATE items SET price = price + 1 WHERE id <= 50");
  trellis::test::StageStep(f.conn());

  // Another session holds down's lock as a rebuild's range does: the
  // follow's try-lock fails, and the drain neither waits nor rolls back.
  auto holder = trellis::pg::Connection::Open(f.url(), "stage_own_writes_test");
  REQUIRE(holder.ok());
  REQUIRE(holder.value()->Exec("BEGIN").ok());
  REQUIRE(holder.value()
              ->Exec("SELECT pg_advisory_xact_lock(" + trellis::workers::TransformLockSpace() +
                         ", (SELECT id FROM trellis.transforms WHERE target_name = 'down'))",
                     {"trellis"})
              .ok());
  const auto drained = DrainOnce(f);
  CHECK(drained.outcome == trellis::drain::PageOutcome::kDrained);
  CHECK(drained.staged_own_writes > 0);
  CHECK(drained.followed_claims == 0);
  // Committed together: up's pages gone, down's made, no capture row left.
  CHECK(PagesOf(f, "up") == "0");
  CHECK(PagesOf(f, "down") != "0");
  CHECK(f.Scalar("SELECT count(*) FROM trellis.capture") == "0");
  REQUIRE(holder.value()->Exec("COMMIT").ok());

  for (;;) {
    const auto next = DrainOnce(f);
    REQUIRE(next.outcome != trellis::drain::PageOutcome::kFailed);
    if (next.outcome == trellis::drain::PageOutcome::kNone) break;
  }
  CHECK(f.Differences("down", "SELECT id, price * 2 + 1 FROM items WHERE (price * 2) % 3 <> 0") ==
        0);
}

TEST_CASE("a drain's own staging that fails leaves its writes to the staging worker",
          "[stage_own_writes]") {
  EngineFixture f;
  // The reader's group key divides by zero for the rows the update below
  // makes (p2 = 1000): staging their changes fails, which a staging batch
  // answers by rebuilding the reader (staging/failing_readers.h).
  auto s =
      DefineBuiltChain(f, {"TRANSFORM up FROM items SELECT price * 2 AS p2",
                           "TRANSFORM down FROM up SELECT 10 / (p2 - 1000) AS g, count(*) AS n "
                           "GROUP BY 10 / (p2 - 1000)"});
  f.Sql("UPDATE items SET price = 500 WHERE id <= 5");
  trellis::test::StageStep(f.conn());

  const auto drained = DrainOnce(f);
  CHECK(drained.outcome == trellis::drain::PageOutcome::kDrained);
  CHECK(drained.read_by_others);
  CHECK(drained.staged_own_writes == 0);
  // up's writes committed; their capture rows wait for the staging worker.
  CHECK(f.Scalar("SELECT count(*) FROM up WHERE p2 = 1000") == "5");
  CHECK(f.Scalar("SELECT count(*) > 0 FROM trellis.capture") == "t");

  // Put right, the worker stages what was left and the reader converges.
  f.Sql("UPDATE items SET price = id WHERE id <= 5");
  auto workers = trellis::BackgroundWorkers::Start(f.Options(), true, 1);
  f.AwaitConverged(*s);
  CHECK(f.Scalar("SELECT count(*) FROM trellis.capture") == "0");
  CHECK(trellis::test::SelectDifferences(
            f, "SELECT g, n FROM down",
            "SELECT 10 / (price * 2 - 1000), count(*) FROM items GROUP BY 1") == 0);
}
