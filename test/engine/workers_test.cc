// Background workers: the heartbeat registry, and a worker loop that survives
// a step that throws.
#include <catch2/catch.hpp>

#include <atomic>
#include <stdexcept>
#include <thread>

#include "engine_fixture.h"
#include "workers/worker_loop.h"

using trellis::test::EngineFixture;

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
