// The first build in ranges (engine/src/drain/build_step.cc, build_job.cc), driven step by
// step from two connections the way two drain workers run it, with writes,
// key changes, deletes and a TRUNCATE landing in the middle.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <random>
#include <thread>

#include "build_steps.h"

using trellis::test::BuildStep;
using trellis::test::EngineFixture;
using trellis::test::kItems;
using trellis::test::TryBuildStep;

namespace {

constexpr const char* kDefinition = trellis::test::kItemsDefinition;
constexpr const char* kQuery = trellis::test::kItemsQuery;

std::unique_ptr<trellis::pg::Connection> Connect(EngineFixture& f) {
  return trellis::test::ConnectBuilder(f);
}

// Catch2's assertions are not thread-safe: threads record their first error
// here and the test checks it on the main thread.
class Errors {
 public:
  bool Ok(const trellis::Status& status) {
    if (status.ok()) return true;
    std::lock_guard lock(mu_);
    if (first_.empty()) first_ = status.message();
    return false;
  }
  std::string first() {
    std::lock_guard lock(mu_);
    return first_;
  }

 private:
  std::mutex mu_;
  std::string first_;
};

}  // namespace

TEST_CASE("a first build is planned as ranges and reports progress by them", "[engine][backfill]") {
  EngineFixture f;
  f.Sql(kItems);
  auto s = f.OpenSession();
  REQUIRE(s->Apply(kDefinition, true).ok());
  auto conn = Connect(f);
  REQUIRE(BuildStep(*conn));  // plans
  CHECK(f.Scalar("SELECT count(*) FROM trellis.jobs") == "6");
  CHECK(f.Scalar("SELECT count(*) FROM trellis.jobs WHERE lo IS NULL") == "1");
  CHECK(f.Scalar("SELECT count(*) FROM trellis.jobs WHERE hi IS NULL") == "1");
  REQUIRE(BuildStep(*conn));
  REQUIRE(BuildStep(*conn));
  auto st = s->ReadStatus("items_t");
  REQUIRE(st.ok());
  CHECK(st->status == "backfilling");
  CHECK(st->backfill.rows_total == 6000);
  CHECK(st->backfill.rows_done == 2000);
  while (f.Scalar("SELECT key_indexed FROM trellis.transforms") == "f") REQUIRE(BuildStep(*conn));
  CHECK(f.Scalar("SELECT count(*) FROM trellis.jobs") == "0");
  CHECK(f.Differences("items_t", kQuery) == 0);
  // The key is made once, at the end: the target is keyed like the source.
  CHECK(f.Scalar("SELECT count(*) FROM pg_constraint WHERE conrelid = 'items_t'::regclass "
                 "AND contype = 'p'") == "1");
  // And its statistics, which ANALYZE alone makes.
  CHECK(f.Scalar("SELECT count(*) > 0 FROM pg_stats WHERE tablename = 'items_t'") == "t");
}

TEST_CASE("two builders, concurrent writes and a TRUNCATE: the target equals its definition",
          "[engine][backfill]") {
  EngineFixture f;
  f.Sql(kItems);
  auto s = f.OpenSession();
  REQUIRE(s->Apply(kDefinition, true).ok());
  // Staging runs (capture -> pages, TRUNCATE -> rebuild); no drain threads:
  // the two builders below are the only ones building.
  auto staging = trellis::BackgroundWorkers::Start(f.Options(), true, 0);
  const unsigned seed = std::random_device{}();
  INFO("seed " << seed);

  Errors errors;
  std::atomic<bool> writing{true};
  std::atomic<bool> truncated_mid_build{false};
  // Builders hold after two steps each until the TRUNCATE below is sent, so
  // it always lands with some ranges appended and some left (a build paced
  // by sleeps alone could finish first on a fast or a loaded machine).
  std::atomic<bool> truncate_sent{false};
  std::thread writer([&] {
    auto conn = Connect(f);
    std::mt19937 rng(seed);
    auto pick = [&](int n) { return std::to_string(1 + rng() % n); };
    for (int i = 0; i < 300; ++i) {
      const int op = static_cast<int>(rng() % 100);
      std::string sql;
      if (op < 35) {
        sql = "UPDATE items SET v = v + 1 WHERE id = " + pick(9000);
      } else if (op < 55) {
        sql = "INSERT INTO items VALUES (" + pick(9000) + ", " + pick(97) +
              ", 'new') ON CONFLICT (id) DO UPDATE SET w = 'upserted'";
      } else if (op < 70) {
        sql = "DELETE FROM items WHERE id = " + pick(9000);
      } else if (op < 85) {
        // A key change moves a row across ranges.
        sql = "UPDATE items SET id = id + 20000 WHERE id = " + pick(6000);
      } else if (op < 99) {
        sql = "UPDATE items SET w = w || 'x' WHERE id BETWEEN " + pick(6000) + " AND " + pick(6000);
      } else {
        sql =
            "TRUNCATE items; INSERT INTO items SELECT g, g % 97, 't' FROM "
            "generate_series(1, 3000) g";
      }
      if (i == 5) {
        // Wait until the build is half way (some ranges appended, some not),
        // then TRUNCATE: the build must start again from the new contents.
        for (int wait = 0; wait < 2000; ++wait) {
          auto left = conn->Query("SELECT count(*) FROM trellis.jobs");
          if (!left.ok() && !errors.Ok(left.status())) return;
          const int n = std::stoi(left->text(0, 0));
          if (n >= 1 && n <= 5) {
            truncated_mid_build = true;
            break;
          }
          std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
        sql =
            "TRUNCATE items; INSERT INTO items SELECT g, g % 97, md5(g::text) FROM "
            "generate_series(1, 5000) g";
      }
      if (!errors.Ok(conn->ExecScript(sql))) break;
      if (i == 5) truncate_sent = true;
    }
    writing = false;
  });
  std::vector<std::thread> builders;
  for (int b = 0; b < 2; ++b) {
    builders.emplace_back([&] {
      auto conn = Connect(f);
      int steps = 0;
      for (;;) {
        const bool done_writing = !writing;
        if (steps >= 2 && !truncate_sent && !done_writing) {
          std::this_thread::sleep_for(std::chrono::milliseconds(2));
          continue;
        }
        auto built = conn->Query("SELECT key_indexed FROM trellis.transforms");
        if (!built.ok() && !errors.Ok(built.status())) return;
        if (done_writing && built->text(0, 0) == "t") return;
        auto stepped = TryBuildStep(*conn);
        if (!stepped.ok() && !errors.Ok(stepped.status())) return;
        if (stepped.value()) ++steps;
        // Paced, so that the build spans many of the writer's statements.
        std::this_thread::sleep_for(std::chrono::milliseconds(stepped.value() ? 40 : 2));
      }
    });
  }
  writer.join();
  for (auto& b : builders) b.join();
  REQUIRE(errors.first() == "");
  CHECK(truncated_mid_build);
  auto drains = trellis::BackgroundWorkers::Start(f.Options(), false, 2);
  f.AwaitConverged(*s);
  CHECK(f.Differences("items_t", kQuery) == 0);
}

TEST_CASE("a composite key is cut into ranges by its whole key", "[engine][backfill]") {
  EngineFixture f;
  // (region, seq) with few regions: boundaries fall inside a region, so the
  // ranges must compare the whole key, not its first column.
  f.Sql(
      "CREATE TABLE readings (region text, seq int, reading numeric, PRIMARY KEY (region, seq)); "
      "INSERT INTO readings SELECT 'r' || (g % 3), g, g * 0.5 FROM generate_series(1, 5000) g");
  auto s = f.OpenSession();
  REQUIRE(s->Apply("TRANSFORM doubled FROM readings SELECT reading * 2 AS twice", true).ok());
  auto conn = Connect(f);
  REQUIRE(BuildStep(*conn));  // plans
  CHECK(f.Scalar("SELECT count(*) FROM trellis.jobs") == "5");
  CHECK(f.Scalar("SELECT count(*) FROM trellis.jobs WHERE lo IS NOT NULL AND "
                 "cardinality(lo) <> 2") == "0");
  while (f.Scalar("SELECT key_indexed FROM trellis.transforms") == "f") REQUIRE(BuildStep(*conn));
  CHECK(f.Differences("doubled", "SELECT region, seq, reading * 2 AS twice FROM readings") == 0);
  CHECK(f.Scalar("SELECT count(*) FROM doubled") == "5000");
}

TEST_CASE("a build's last step never waits long on its target while it holds the transform's row",
          "[engine][backfill][locks]") {
  EngineFixture f;
  f.Sql(kItems);
  auto s = f.OpenSession();
  REQUIRE(s->Apply(kDefinition, true).ok());
  auto conn = Connect(f);
  // Every range built: what is left is the last step, which makes the key.
  REQUIRE(BuildStep(*conn));
  while (f.Scalar("SELECT count(*) FROM trellis.jobs") != "0") REQUIRE(BuildStep(*conn));
  REQUIRE(f.Scalar("SELECT key_indexed FROM trellis.transforms") == "f");

  // A reader of the target holds its lock (as a staging batch reading it for
  // a transform over it does, which then waits for the transform's row).
  auto reader = trellis::pg::Connection::Open(f.url(), "reader");
  REQUIRE(reader.ok());
  REQUIRE(reader.value()->Exec("BEGIN").ok());
  REQUIRE(reader.value()->Exec("SELECT count(*) FROM items_t").ok());

  // The step gives up within its lock timeout instead of waiting for the
  // reader with the row held (it waited until the reader ended).
  auto step = std::async(std::launch::async, [&] { return TryBuildStep(*conn); });
  const bool returned = step.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
  CHECK(returned);
  CHECK(f.Scalar("SELECT key_indexed FROM trellis.transforms") == "f");
  CHECK(f.Scalar("SELECT count(*) FROM trellis.transforms WHERE id IN (SELECT id FROM "
                 "trellis.transforms FOR KEY SHARE SKIP LOCKED)") == "1");
  REQUIRE(reader.value()->Exec("COMMIT").ok());
  auto stepped = step.get();
  if (!stepped.ok()) FAIL(stepped.status().message());

  // Tried again once the reader is gone: the key is made, the build ends.
  while (f.Scalar("SELECT key_indexed FROM trellis.transforms") == "f") {
    REQUIRE(BuildStep(*conn));
  }
  CHECK(f.Differences("items_t", kQuery) == 0);
}

namespace {

// Builds every range of `items_t`: what is left is the last step.
void BuildRanges(EngineFixture& f, trellis::pg::Connection& conn) {
  REQUIRE(BuildStep(conn));
  while (f.Scalar("SELECT count(*) FROM trellis.jobs") != "0") REQUIRE(BuildStep(conn));
  REQUIRE(f.Scalar("SELECT key_indexed FROM trellis.transforms") == "f");
}

}  // namespace

TEST_CASE("a build's last step behind a define holding the transforms table is retried, not failed",
          "[engine][backfill][locks]") {
  EngineFixture f;
  f.Sql(kItems);
  auto s = f.OpenSession();
  REQUIRE(s->Apply(kDefinition, true).ok());
  auto conn = Connect(f);
  BuildRanges(f, *conn);

  // A define (or a drop) holds the table until it commits. The step used to
  // make the key, then fail its catalog update on the lock timeout set for
  // the key (55P03: a failed step, which the drain worker answered with a
  // reconnect and a backoff).
  auto definer = trellis::pg::Connection::Open(f.url(), "definer");
  REQUIRE(definer.ok());
  REQUIRE(definer.value()->Exec("BEGIN").ok());
  REQUIRE(definer.value()->Exec("LOCK TABLE trellis.transforms IN SHARE ROW EXCLUSIVE MODE").ok());

  auto step = std::async(std::launch::async, [&] { return TryBuildStep(*conn); });
  const bool returned = step.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
  CHECK(returned);
  if (!returned) REQUIRE(definer.value()->Exec("COMMIT").ok());
  auto stepped = step.get();
  if (!stepped.ok()) FAIL(stepped.status().message());
  // A retry: the step says it did something (the worker asks again without
  // sleeping), its transaction rolled back on a connection that stays.
  CHECK(stepped.value());
  CHECK_FALSE(conn->broken());
  CHECK_FALSE(conn->in_transaction());
  CHECK(f.Scalar("SELECT key_indexed FROM trellis.transforms") == "f");
  CHECK(f.Scalar("SELECT count(*) FROM pg_constraint WHERE conrelid = 'items_t'::regclass") == "0");
  // Nothing charged: no failure, no retry_at holding the next step back.
  CHECK(f.Scalar("SELECT count(*) FROM trellis.drain_failures") == "0");
  if (returned) REQUIRE(definer.value()->Exec("COMMIT").ok());

  while (f.Scalar("SELECT key_indexed FROM trellis.transforms") == "f") REQUIRE(BuildStep(*conn));
  CHECK(f.Differences("items_t", kQuery) == 0);
}

TEST_CASE("the last step's lock timeout holds for the key's statement only",
          "[engine][backfill][locks]") {
  EngineFixture f;
  f.Sql(kItems);
  auto s = f.OpenSession();
  REQUIRE(s->Apply(kDefinition, true).ok());
  auto conn = Connect(f);
  BuildRanges(f, *conn);

  // A row the step deletes after the key is made (a settled failure of the
  // transform's pages), held by another transaction: the step waits for it
  // as any statement waits, past the key's 200 ms.
  f.Sql(
      "INSERT INTO trellis.drain_failures (transform_id, unit_kind, failure_class, retry_at, "
      "message, parts) SELECT id, 'pages', 'other', now(), 'm', '{}' FROM trellis.transforms");
  auto holder = trellis::pg::Connection::Open(f.url(), "holder");
  REQUIRE(holder.ok());
  REQUIRE(holder.value()->Exec("BEGIN").ok());
  REQUIRE(holder.value()->Exec("SELECT * FROM trellis.drain_failures FOR UPDATE").ok());

  auto step = std::async(std::launch::async, [&] { return TryBuildStep(*conn); });
  const bool waited = step.wait_for(std::chrono::milliseconds(1500)) == std::future_status::timeout;
  CHECK(waited);
  REQUIRE(holder.value()->Exec("COMMIT").ok());
  auto stepped = step.get();
  if (!stepped.ok()) FAIL(stepped.status().message());
  CHECK(stepped.value());
  // The step ended the build: the key made, the failure settled.
  CHECK(f.Scalar("SELECT key_indexed FROM trellis.transforms") == "t");
  CHECK(f.Scalar("SELECT count(*) FROM trellis.drain_failures") == "0");
  // And no bound is left on the session after it.
  CHECK(f.Scalar("SELECT count(*) FROM pg_constraint WHERE conrelid = 'items_t'::regclass "
                 "AND contype = 'p'") == "1");
  auto timeout = conn->Query("SHOW lock_timeout");
  REQUIRE(timeout.ok());
  CHECK(timeout->text(0, 0) == "0");
  CHECK(f.Differences("items_t", kQuery) == 0);
}
