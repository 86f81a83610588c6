// Background workers: the heartbeat registry, a worker loop that survives a
// step that throws, and a staging worker that stages whatever its chore does.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>

#include "engine_fixture.h"
#include "staging/staging_worker.h"
#include "widgets.h"
#include "workers/worker_loop.h"

using trellis::test::EngineFixture;
using trellis::test::kWidgets;

namespace {

// Throws from its first step; counts the steps and connections it sees.
class ThrowingOnce : public trellis::workers::WorkerLoop {
 public:
  explicit ThrowingOnce(trellis::ConnectOptions options)
      : WorkerLoop(std::move(options), "drain", trellis::workers::MakeWorkerId("drain")) {}
  ~ThrowingOnce() override { Stop(); }
  std::atomic<int> steps{0};
  std::atomic<int> connections{0};

 protected:
  trellis::Result<bool> Prepare(trellis::pg::Connection&) override {
    connections.fetch_add(1);
    return true;
  }
  trellis::Result<bool> Step(trellis::pg::Connection&) override {
    if (steps.fetch_add(1) == 0) throw std::runtime_error("a bug");
    return false;
  }
};

}  // namespace

TEST_CASE("heartbeats tell whether workers are live", "[engine][workers]") {
  EngineFixture f;
  auto s = f.OpenSession();
  CHECK_FALSE(s->HasLiveDrainWorkers().value());
  CHECK_FALSE(s->HasLiveStagingWorker().value());
  {
    auto workers = trellis::BackgroundWorkers::Start(f.Options(), true, 1);
    bool drain = false;
    bool staging = false;
    for (int i = 0; i < 100 && !(drain && staging); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      drain = s->HasLiveDrainWorkers().value();
      staging = s->HasLiveStagingWorker().value();
    }
    CHECK(drain);
    CHECK(staging);
  }
  // A clean stop removes the heartbeat rows.
  CHECK_FALSE(s->HasLiveDrainWorkers().value());
  CHECK_FALSE(s->HasLiveStagingWorker().value());
}

TEST_CASE("a worker step that throws becomes a failed step and a reconnect", "[engine][workers]") {
  EngineFixture f;
  auto s = f.OpenSession();
  ThrowingOnce worker(f.Options());
  worker.Start();
  for (int i = 0; i < 200 && worker.steps.load() < 3; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  CHECK(worker.steps.load() >= 3);        // the thread lives on
  CHECK(worker.connections.load() == 2);  // on a new connection
}

TEST_CASE("a staging chore that throws costs no staging", "[engine][workers]") {
  // The chore is the operators' transform reports: a bug there once ended
  // every step before its batch, and no write reached a target.
  EngineFixture f;
  f.Sql(kWidgets);
  auto s = f.OpenSession();
  REQUIRE(s->Apply("TRANSFORM a FROM widgets SELECT price AS price", true).ok());
  std::atomic<int> chores{0};
  trellis::staging::StagingChore chore;
  chore.every = std::chrono::milliseconds(20);
  chore.run = [&](trellis::pg::Connection&, const std::string&) -> trellis::Status {
    chores.fetch_add(1);
    throw std::runtime_error("a bug");
  };
  trellis::staging::StagingWorker staging(f.Options(), std::move(chore));
  staging.Start();
  auto drains = trellis::BackgroundWorkers::Start(f.Options(), false, 1);
  f.AwaitConverged(*s);
  f.Sql("UPDATE widgets SET price = price + 1 WHERE id <= 50");
  f.AwaitConverged(*s);
  CHECK(f.Differences("a", "SELECT id, price FROM widgets") == 0);
  CHECK(chores.load() >= 2);
}
