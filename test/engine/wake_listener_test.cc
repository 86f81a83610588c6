// Wake-ups across ports: the channel names, and a listener that turns
// another process's notification into a nudge of its workers, skips its own
// process's, and survives its session being terminated.
#include <catch2/catch.hpp>

#include <chrono>
#include <string>
#include <thread>

#include "engine_fixture.h"
#include "sql/quote.h"
#include "trellis/engine_metrics.h"
#include "workers/wake_channel.h"
#include "workers/wake_listener.h"

using trellis::test::EngineFixture;
using trellis::workers::WakeChannel;
using trellis::workers::WakeRole;

namespace {

uint64_t StagingWakes() {
  return trellis::GlobalEngineMetrics().remote_staging_wakes.load(std::memory_order_relaxed);
}

// Notifies the staging channel as a commit of `sender` would, until the
// listener counts a wake (it may still be connecting or listening): false
// when none is counted within 10 s.
bool WakeArrives(EngineFixture& f, const std::string& sender) {
  const uint64_t before = StagingWakes();
  const std::string notify = "SELECT pg_notify(" +
                             trellis::sql::Literal(WakeChannel("trellis", "staging")) + ", " +
                             trellis::sql::Literal(sender) + ")";
  for (int i = 0; i < 200; ++i) {
    f.Sql(notify);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (StagingWakes() > before) return true;
  }
  return false;
}

std::string ListenerPid(EngineFixture& f) {
  return f.Scalar(
      "SELECT coalesce(string_agg(pid::text, ','), '') FROM pg_stat_activity "
      "WHERE datname = current_database() AND application_name = " +
      trellis::sql::Literal(f.Options().application_name + " wake listener"));
}

}  // namespace

TEST_CASE("wake channels fit in 63 bytes and differ per schema and role at any length",
          "[engine][wake]") {
  CHECK(WakeChannel("trellis", "drain") == "trellis.drain.trellis");
  CHECK(WakeChannel("trellis", "staging") == "trellis.staging.trellis");
  // Two 63-byte schemas that differ only in their last byte: cut to 63
  // bytes, their channels would be one.
  const std::string a(63, 'a');
  const std::string b = std::string(62, 'a') + "b";
  for (const auto& schema : {a, b}) {
    for (const char* role : {"staging", "drain"}) {
      CHECK(WakeChannel(schema, role).size() <= 63);
      CHECK(WakeRole(schema, WakeChannel(schema, role)) == std::optional<std::string>(role));
    }
  }
  CHECK(WakeChannel(a, "drain") != WakeChannel(b, "drain"));
  CHECK(WakeChannel(a, "drain") != WakeChannel(a, "staging"));
  // A short schema spelled like a long one's hash keeps its own channel.
  const std::string hash = WakeChannel(a, "drain").substr(std::string("trellis~drain~").size());
  CHECK(WakeChannel(hash, "drain") != WakeChannel(a, "drain"));
  CHECK_FALSE(WakeRole("trellis", "trellis.drain.other").has_value());
}

TEST_CASE("the wake listener wakes for other processes, not its own, and after its session dies",
          "[engine][wake]") {
  EngineFixture f;
  trellis::workers::WakeListener listener(f.Options(), {"staging"});
  listener.Start();
  REQUIRE(WakeArrives(f, "another port"));

  // Its own process's notification: the workers were nudged in-process.
  const uint64_t before_own = StagingWakes();
  const uint64_t drain_before = trellis::GlobalEngineMetrics().remote_drain_wakes.load();
  f.Sql("SELECT pg_notify(" + trellis::sql::Literal(WakeChannel("trellis", "staging")) + ", " +
        trellis::sql::Literal(trellis::workers::WakeSender()) + ")");
  // One notification of another channel of the same schema: not listened to.
  f.Sql("SELECT pg_notify(" + trellis::sql::Literal(WakeChannel("trellis", "drain")) +
        ", 'another port')");
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  CHECK(StagingWakes() == before_own);
  CHECK(trellis::GlobalEngineMetrics().remote_drain_wakes.load() == drain_before);

  // The server ends the idle session (a restart, an idle timeout, an
  // operator): PQstatus still says OK until the listener reads the socket.
  const std::string first = ListenerPid(f);
  REQUIRE_FALSE(first.empty());
  CHECK(f.Scalar("SELECT pg_terminate_backend(" + first + ")") == "t");
  REQUIRE(WakeArrives(f, "another port"));
  const std::string second = ListenerPid(f);
  CHECK_FALSE(second.empty());
  CHECK(second != first);
  listener.Stop();
  // Its session closes with it (the server notices within moments).
  bool closed = false;
  for (int i = 0; i < 100 && !closed; ++i) {
    closed = ListenerPid(f).empty();
    if (!closed) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  CHECK(closed);
}
