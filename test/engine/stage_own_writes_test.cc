// A drain whose target another transform reads stages its own writes for
// that reader in its transaction (staging::StageOwnWrites): the reader's
// pages commit with the writes, and nothing is left for a staging batch.
// When that staging fails, the writes are left to the staging worker and
// the drain still commits.
#include <catch2/catch.hpp>

#include "drain/charging.h"
#include "drain/drain_page.h"
#include "drain/unit_executor.h"
#include "engine_fixture.h"
#include "pipeline_steps.h"
#include "staging/stage_batch.h"
#include "trellis/workers.h"

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

TEST_CASE("a drain whose target another reads stages its writes for the reader itself",
          "[stage_own_writes]") {
  EngineFixture f;
  auto s = DefineBuiltChain(f, {"TRANSFORM up FROM items SELECT price * 2 AS p2",
                                "TRANSFORM down FROM up SELECT p2 + 1 AS p3 WHERE p2 % 3 <> 0"});
  f.Sql("UPDATE items SET price = price + 1 WHERE id <= 50");
  trellis::test::StageStep(f.conn());
  REQUIRE(PagesOf(f, "up") != "0");
  REQUIRE(PagesOf(f, "down") == "0");

  const auto drained = DrainOnce(f);
  CHECK(drained.outcome == trellis::drain::PageOutcome::kDrained);
  CHECK(drained.read_by_others);
  CHECK(drained.staged_own_writes > 0);
  // Committed together: up's pages gone, down's made, no capture row left.
  CHECK(PagesOf(f, "up") == "0");
  CHECK(PagesOf(f, "down") != "0");
  CHECK(f.Scalar("SELECT count(*) FROM trellis.capture") == "0");

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
