// A chain defined back to back (each link before the one it reads is
// built), driven one step at a time: the upstream's first build is one
// write of every row to a target the next link reads. That next link's own
// first build reads those rows, so staging makes no pages of them for it
// (staging/stage_batch.cc), and its build starts as soon as the upstream
// is caught up, without waiting for the staging worker to store `live`
// (catalog/chains.h, UpstreamNotLiveSql).
#include <catch2/catch.hpp>

#include "build_steps.h"
#include "catalog/states.h"
#include "engine_fixture.h"
#include "pipeline_steps.h"

using trellis::test::BuildStep;
using trellis::test::ConnectBuilder;
using trellis::test::EngineFixture;

namespace {

constexpr const char* kRows = R"sql(
CREATE TABLE items (id int PRIMARY KEY, price int NOT NULL);
INSERT INTO items SELECT g, g FROM generate_series(1, 5000) g;
)sql";

std::string StatusOf(EngineFixture& f, const std::string& name) {
  return f.Scalar("SELECT status FROM trellis.transforms WHERE target_name = '" + name + "'");
}

// Defines up over items and down over up, with no worker running: both
// wait to be built.
std::unique_ptr<trellis::Session> DefineChain(EngineFixture& f) {
  f.Sql(kRows);
  auto s = f.OpenSession();
  REQUIRE(s->Apply("TRANSFORM up FROM items SELECT price * 2 AS p2", true).ok());
  REQUIRE(s->Apply("TRANSFORM down FROM up SELECT p2 + 1 AS p3", true).ok());
  REQUIRE(StatusOf(f, "down") == "waiting_to_backfill");
  return s;
}

// Runs build steps until up's build has ended.
void BuildUp(EngineFixture& f, trellis::pg::Connection& builder) {
  while (StatusOf(f, "up") != "catching_up") REQUIRE(BuildStep(builder, 1000));
}

}  // namespace

TEST_CASE("an upstream's first build makes no pages for a link not built yet", "[chains]") {
  EngineFixture f;
  auto s = DefineChain(f);
  auto builder = ConnectBuilder(f);
  BuildUp(f, *builder);
  // The build's rows were captured on up's target for down.
  REQUIRE(f.Scalar("SELECT count(*) > 0 FROM trellis.capture") == "t");
  while (f.Scalar("SELECT count(*) FROM trellis.capture") != "0") {
    trellis::test::StageStep(*builder);
  }
  // As the staging worker does after a batch: up has no page left.
  REQUIRE(trellis::catalog::PromoteCaughtUp(*builder, "trellis").ok());
  // Staged while down waits for its first build: no page of up's 5000 rows
  // (before the gate, 5000 keys, drained again after down's build).
  CHECK(f.Scalar("SELECT count(*) FROM trellis.pages p JOIN trellis.transforms t "
                 "ON t.id = p.transform_id WHERE t.target_name = 'down'") == "0");

  while (BuildStep(*builder, 1000)) {
  }
  f.Sql("UPDATE items SET price = price + 1 WHERE id % 7 = 0");
  trellis::test::StageAndDrain(*builder);
  trellis::test::StageAndDrain(*builder);
  CHECK(f.Differences("down", "SELECT id, price * 2 + 1 FROM items") == 0);
}

TEST_CASE("a link's first build starts once the upstream is caught up, before staging stores live",
          "[chains]") {
  EngineFixture f;
  auto s = DefineChain(f);
  auto builder = ConnectBuilder(f);
  BuildUp(f, *builder);
  // No staging batch has run, so nothing promoted up; it has no page left,
  // so it is live in all but the stored word.
  REQUIRE(StatusOf(f, "up") == "catching_up");
  CHECK(s->ReadStatus("up")->status == "live");
  REQUIRE(BuildStep(*builder, 1000));
  CHECK(StatusOf(f, "down") == "backfilling");
  while (BuildStep(*builder, 1000)) {
  }
  trellis::test::StageAndDrain(*builder);
  CHECK(f.Differences("down", "SELECT id, price * 2 + 1 FROM items") == 0);
}
