// Transforms over transforms (catalog/chains.h): a downstream defined while
// its upstream builds waits for it; status names the paused columns
// upstream; an upstream that others read cannot be dropped.
#include <catch2/catch.hpp>
#include <chrono>
#include <thread>

#include "engine_fixture.h"
#include "trellis/workers.h"

using trellis::test::EngineFixture;

namespace {
constexpr const char* kItems = R"sql(
CREATE TABLE items (id int PRIMARY KEY, price int NOT NULL, label text);
INSERT INTO items SELECT g, g, 'l' || g FROM generate_series(1, 20000) g;
)sql";
}  // namespace

TEST_CASE("a transform over a building upstream waits for it, then builds", "[chains]") {
  EngineFixture f;
  f.Sql(kItems);
  auto s = f.OpenSession();
  REQUIRE(s->Apply("TRANSFORM up FROM items SELECT price * 2 AS p2, label AS label", true).ok());
  // No key on up's target yet: down is keyed by the key up will have.
  CHECK(f.Scalar("SELECT count(*) FROM pg_constraint WHERE conrelid = 'up'::regclass") == "0");
  REQUIRE(s->Apply("TRANSFORM down FROM up SELECT p2 + 1 AS p3 WHERE p2 % 3 <> 0", true).ok());
  CHECK(s->ReadStatus("down")->status == "waiting_to_backfill");
  // A third level over an upstream with no rows yet is not built at once.
  REQUIRE(s->Apply("TRANSFORM leaf FROM down SELECT -p3 AS p4", true).ok());
  CHECK(s->ReadStatus("leaf")->status == "waiting_to_backfill");

  auto workers = trellis::BackgroundWorkers::Start(f.Options(), true, 2);
  // While up is not live, down does not start its build.
  for (int i = 0; i < 200; ++i) {
    // down first: up not live after it means up was not live when down was
    // read (read in the other order, up could go live and down start its
    // build between the two reads).
    auto down = s->ReadStatus("down");
    auto up = s->ReadStatus("up");
    REQUIRE((up.ok() && down.ok()));
    if (up->status == "live") break;
    CHECK(down->status == "waiting_to_backfill");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  f.Sql("UPDATE items SET price = price + 1 WHERE id % 7 = 0");
  f.AwaitConverged(*s);
  CHECK(s->ReadStatus("down")->status == "live");
  CHECK(f.Differences("down", "SELECT id, price * 2 + 1 FROM items WHERE (price * 2) % 3 <> 0") ==
        0);
  CHECK(f.Differences("leaf",
                      "SELECT id, -(price * 2 + 1) FROM items WHERE (price * 2) % 3 <> 0") == 0);
}

TEST_CASE("DROP of a transform another reads is refused, naming the readers", "[chains]") {
  EngineFixture f;
  f.Sql(kItems);
  auto s = f.OpenSession();
  auto workers = trellis::BackgroundWorkers::Start(f.Options(), true, 1);
  REQUIRE(s->Apply("TRANSFORM up FROM items SELECT price * 2 AS p2", true).ok());
  REQUIRE(s->Apply("TRANSFORM reader_b FROM up SELECT p2 AS p", true).ok());
  REQUIRE(s->Apply("TRANSFORM reader_a FROM up SELECT p2 + 1 AS p", true).ok());
  f.AwaitConverged(*s);
  REQUIRE(s->Apply("PAUSE TRANSFORM up", false).ok());
  auto refused = s->Apply("DROP TRANSFORM up", false);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().code() == trellis::Code::kValidation);
  CHECK_THAT(refused.status().message(), Catch::Contains("reader_a, reader_b"));
  // Nothing changed: up and its capture are there, and it resumes.
  CHECK(f.Scalar("SELECT to_regclass('up') IS NOT NULL") == "t");
  CHECK(f.Scalar("SELECT count(*) FROM trellis.transforms") == "3");
  REQUIRE(s->Apply("RESUME TRANSFORM up", false).ok());
  f.Sql("UPDATE items SET price = 0 WHERE id = 1");
  f.AwaitConverged(*s);
  CHECK(f.Differences("reader_a", "SELECT id, price * 2 + 1 FROM items") == 0);
  // Readers first, then it.
  for (const char* t : {"reader_a", "reader_b", "up"}) {
    REQUIRE(s->Apply(std::string("PAUSE TRANSFORM ") + t, false).ok());
    REQUIRE(s->Apply(std::string("DROP TRANSFORM ") + t, false).ok());
  }
  CHECK(f.Scalar("SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'trellis%'") == "0");
}

TEST_CASE("status lists the paused columns upstream a transform reads", "[chains]") {
  EngineFixture f;
  f.Sql(kItems);
  auto s = f.OpenSession();
  auto workers = trellis::BackgroundWorkers::Start(f.Options(), true, 1);
  REQUIRE(s->Apply("TRANSFORM up FROM items SELECT price * 2 AS p2, label AS label", true).ok());
  REQUIRE(s->Apply("TRANSFORM mid FROM up SELECT p2 + 1 AS p3", true).ok());
  REQUIRE(s->Apply("TRANSFORM leaf FROM mid SELECT p3 * 10 AS p4", true).ok());
  f.AwaitConverged(*s);
  CHECK(s->ReadStatus("leaf")->paused_upstream_columns.empty());

  // A column mid does not read: nobody downstream reports it.
  REQUIRE(s->Apply("PAUSE TRANSFORM up.label", false).ok());
  CHECK(s->ReadStatus("mid")->paused_upstream_columns.empty());
  REQUIRE(s->Apply("PAUSE TRANSFORM up.p2", false).ok());
  for (const char* t : {"mid", "leaf"}) {
    auto st = s->ReadStatus(t);
    INFO(t << ": " << (st.ok() ? std::string() : st.status().message()));
    REQUIRE(st.ok());
    CHECK(st->paused_upstream_columns == std::vector<std::string>{"up.p2"});
    CHECK(st->status == "catching_up");
  }
  // Writes meanwhile leave p2 as it was: mid and leaf follow up's target.
  f.Sql("UPDATE items SET price = price + 5 WHERE id <= 100");
  f.AwaitConverged(*s);
  CHECK(f.Differences("leaf", "SELECT id, (p2 + 1) * 10 FROM up") == 0);

  // Resumed (and rebuilt): cleared, and the chain holds the writes.
  REQUIRE(s->Apply("RESUME TRANSFORM up.p2", false).ok());
  REQUIRE(s->Apply("RESUME TRANSFORM up.label", false).ok());
  f.AwaitConverged(*s);
  auto leaf = s->ReadStatus("leaf");
  CHECK(leaf->paused_upstream_columns.empty());
  CHECK(leaf->status == "live");
  CHECK(f.Differences("leaf", "SELECT id, (price * 2 + 1) * 10 FROM items") == 0);
}
