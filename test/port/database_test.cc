// Ops that reach PostgreSQL (a testkit cluster): connect, server_info,
// config, migrate; deadlines, cancel frames, the pool, and shutdown with
// statements running.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <functional>
#include <memory>
#include <thread>

#include "port_process.h"
#include "test_cluster.h"
#include "trellis/engine.h"

namespace trellis::port_test {
namespace {

using protocol::MakeMap;
using protocol::Map;
using protocol::Value;
using std::chrono::steady_clock;

Map ConnectArgs(const std::string& schema, int64_t pool_size, const std::string& app) {
  return MakeMap({{"url", ClusterUrl()},
                  {"schema", schema},
                  {"pool_size", pool_size},
                  {"application_name", app}});
}

// A port past its hello and a successful connect.
std::unique_ptr<PortProcess> ConnectedPort(const std::string& schema, int64_t pool_size,
                                           const std::string& app) {
  auto port = std::make_unique<PortProcess>();
  REQUIRE(port->ReceiveHello());
  auto reply = port->Call(1, "connect", ConnectArgs(schema, pool_size, app));
  REQUIRE(reply);
  INFO(Show(*reply));
  REQUIRE(reply->ok());
  return port;
}

// Holds the migration lock of `schema` from a session of the test's own, so
// a migrate call blocks until Release().
class MigrationLockHolder {
 public:
  explicit MigrationLockHolder(const std::string& schema)
      : client_(ClusterUrl()), key_(std::to_string(MigrationLockKey(schema))) {
    client_.Scalar("SELECT pg_advisory_lock(" + key_ + ")");
  }
  void Release() { client_.Scalar("SELECT pg_advisory_unlock(" + key_ + ")"); }

 private:
  PgClient client_;
  std::string key_;
};

// Statements of `app` waiting on a lock right now.
int LockWaiters(const std::string& app) {
  PgClient client(ClusterUrl());
  return std::stoi(
      *client.Scalar("SELECT count(*) FROM pg_stat_activity WHERE application_name = '" + app +
                     "' AND state = 'active' AND wait_event_type = 'Lock'"));
}

TEST_CASE("connect and server_info report the instance and versions", "[port][db]") {
  PortProcess port;
  REQUIRE(port.ReceiveHello());
  auto connected = port.Call(1, "connect", ConnectArgs("port_info", 2, "port-test-info"));
  REQUIRE(connected);
  INFO(Show(*connected));
  REQUIRE(connected->ok());
  const Value& info = OkValue(*connected);
  CHECK(*info.Find("instance") == Value("postgres/port_info"));
  CHECK_THAT(info.Find("server_version")->as_string(), Catch::StartsWith("15"));
  CHECK(*info.Find("engine_version") == Value(TRELLIS_VERSION));
  CHECK(*info.Find("protocol") == Value(protocol::Array{1, 0}));

  auto server_info = port.Call(2, "server_info");
  REQUIRE(server_info);
  REQUIRE(server_info->ok());
  const Value& again = OkValue(*server_info);
  CHECK(*again.Find("instance") == *info.Find("instance"));
  CHECK(*again.Find("server_version") == *info.Find("server_version"));
  CHECK(again.Find("protocol") == nullptr);
}

TEST_CASE("a second connect is a validation error", "[port][db]") {
  auto port = ConnectedPort("port_twice", 1, "port-test-twice");
  auto reply = port->Call(2, "connect", ConnectArgs("port_twice", 1, "port-test-twice"));
  REQUIRE(reply);
  CHECK(ErrorCode(*reply) == "validation");
  CHECK_THAT(ErrorMessage(*reply), Catch::StartsWith("already connected"));
}

TEST_CASE("connect names the argument that is wrong, and may then be retried", "[port][db]") {
  PortProcess port;
  REQUIRE(port.ReceiveHello());
  struct Case {
    Map args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {MakeMap({}), "missing required argument \"url\" (a string)"},
      {MakeMap({{"url", 5}}), "argument \"url\" must be a string, got integer"},
      {MakeMap({{"url", ClusterUrl()}, {"pool_size", 0}}),
       "argument \"pool_size\" must be an integer in 1..100, got 0"},
      {MakeMap({{"url", ClusterUrl()}, {"pool_size", 101}}),
       "argument \"pool_size\" must be an integer in 1..100, got 101"},
      {MakeMap({{"url", ClusterUrl()}, {"staging", "yes"}}),
       "argument \"staging\" must be a boolean, got string"},
      {MakeMap({{"url", ClusterUrl()}, {"drain_threads", -1}}),
       "argument \"drain_threads\" must be an integer in 0..100, got -1"},
      {MakeMap({{"url", ClusterUrl()}, {"schema", ""}}), "argument \"schema\" is empty"},
  };
  uint64_t id = 1;
  for (const auto& c : cases) {
    auto reply = port.Call(id++, "connect", c.args);
    REQUIRE(reply);
    CHECK(ErrorCode(*reply) == "validation");
    CHECK(ErrorMessage(*reply) == c.message);
  }
  auto reply = port.Call(id, "connect", ConnectArgs("port_args", 1, "port-test-args"));
  REQUIRE(reply);
  CHECK(reply->ok());
}

TEST_CASE("connect with a bad URL is a connection error that hides the password", "[port][db]") {
  PortProcess port;
  REQUIRE(port.ReceiveHello());
  // Port 1 on localhost: nothing listens there.
  auto reply = port.Call(
      1, "connect", MakeMap({{"url", "postgresql://trellis:hunter2-secret@127.0.0.1:1/postgres"}}));
  REQUIRE(reply);
  CHECK(ErrorCode(*reply) == "connection");
  CHECK_THAT(ErrorMessage(*reply), Catch::Contains("trellis:***@127.0.0.1:1"));
  CHECK_THAT(ErrorMessage(*reply), !Catch::Contains("hunter2"));

  SECTION("a failed connect can be retried on the same port") {
    auto retried = port.Call(2, "connect", ConnectArgs("port_retry", 1, "port-test-retry"));
    REQUIRE(retried);
    CHECK(retried->ok());
  }
}

TEST_CASE("a connect to a server that never answers times out at its deadline", "[port][db]") {
  // A listening socket nobody accepts on: the kernel completes the TCP
  // handshake, then libpq waits for an answer that never comes.
  const int listener = socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(listener >= 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
  REQUIRE(listen(listener, 8) == 0);
  socklen_t length = sizeof address;
  REQUIRE(getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length) == 0);
  const std::string silent_url =
      "postgresql://postgres@127.0.0.1:" + std::to_string(ntohs(address.sin_port)) + "/postgres";

  PortProcess port;
  REQUIRE(port.ReceiveHello());
  const auto start = steady_clock::now();
  port.Request(1, "connect", MakeMap({{"url", silent_url}}), 500);
  auto reply = port.ReceiveReply(3s);
  const auto elapsed = steady_clock::now() - start;
  REQUIRE(reply);
  CHECK(ErrorCode(*reply) == "timeout");
  CHECK_THAT(ErrorMessage(*reply), Catch::Contains("500 ms"));
  CHECK(elapsed >= 450ms);
  CHECK(elapsed < 1s);

  // The handle is not connected; a connect to a real server succeeds.
  auto retried = port.Call(2, "connect", ConnectArgs("port_silent", 1, "port-test-silent"));
  REQUIRE(retried);
  CHECK(retried->ok());
  close(listener);
}

TEST_CASE("config shows the handle's options with the password redacted", "[port][db]") {
  PortProcess port;
  REQUIRE(port.ReceiveHello());
  const std::string url = WithPassword(ClusterUrl(), "s3cret-pw");
  auto connected = port.Call(1, "connect",
                             MakeMap({{"url", url},
                                      {"schema", "port_config"},
                                      {"pool_size", 3},
                                      {"staging", false},
                                      {"drain_threads", 2},
                                      {"application_name", "port-test-config"}}));
  REQUIRE(connected);
  REQUIRE(connected->ok());
  auto reply = port.Call(2, "config");
  REQUIRE(reply);
  REQUIRE(reply->ok());
  const Value& config = OkValue(*reply);
  CHECK(*config.Find("url") == Value(WithPassword(ClusterUrl(), "***")));
  CHECK(*config.Find("schema") == Value("port_config"));
  CHECK(*config.Find("application_name") == Value("port-test-config"));
  CHECK(*config.Find("pool_size") == Value(3));
  CHECK(*config.Find("staging") == Value(false));
  CHECK(*config.Find("drain_threads") == Value(2));
}

TEST_CASE("connect with staging before migrate says to run migrate", "[port][db]") {
  PortProcess port;
  REQUIRE(port.ReceiveHello());
  auto connected =
      port.Call(1, "connect",
                MakeMap({{"url", ClusterUrl()}, {"schema", "never_migrated"}, {"staging", true}}));
  REQUIRE(connected);
  REQUIRE_FALSE(connected->ok());
  const auto& error = std::get<trellis::protocol::ErrorInfo>(connected->result);
  CHECK(error.code == "not_migrated");
  CHECK_THAT(error.message, Catch::Contains("migrate"));
}

TEST_CASE("migrate creates the catalog and is idempotent", "[port][db]") {
  auto port = ConnectedPort("port_migrate", 2, "port-test-migrate");
  auto first = port->Call(2, "migrate");
  REQUIRE(first);
  INFO(Show(*first));
  CHECK(Show(*first) == "ok null");
  auto second = port->Call(3, "migrate");
  REQUIRE(second);
  CHECK(Show(*second) == "ok null");
  PgClient client(ClusterUrl());
  CHECK(client.Scalar("SELECT count(*) FROM information_schema.schemata "
                      "WHERE schema_name = 'port_migrate'") == "1");
}

TEST_CASE("a call past its deadline is answered timeout and its statement stops on the server",
          "[port][db]") {
  const std::string app = "port-test-deadline";
  MigrationLockHolder lock("port_deadline");
  auto port = ConnectedPort("port_deadline", 1, app);

  const auto start = steady_clock::now();
  port->Request(2, "migrate", {}, 500);
  auto reply = port->ReceiveReply(3s);
  const auto elapsed = steady_clock::now() - start;
  REQUIRE(reply);
  CHECK(reply->call_id == 2);
  CHECK(ErrorCode(*reply) == "timeout");
  CHECK(ErrorMessage(*reply) ==
        "op \"migrate\" ran past its 500 ms deadline; its statement was cancelled on the server");
  CHECK(elapsed >= 450ms);
  CHECK(elapsed < 1s);
  CHECK(Eventually([&] { return LockWaiters(app) == 0; }));

  // pool_size 1: the cancelled call's session serves the next call.
  auto next = port->Call(3, "server_info");
  REQUIRE(next);
  CHECK(next->call_id == 3);
  CHECK(next->ok());
  CHECK_FALSE(port->Receive(200ms));  // the late migrate result was dropped
  lock.Release();
}

TEST_CASE("a call that finds every session busy times out naming the pool", "[port][db]") {
  const std::string app = "port-test-busy";
  MigrationLockHolder lock("port_busy");
  auto port = ConnectedPort("port_busy", 1, app);
  port->Request(2, "migrate", {}, 20'000);
  REQUIRE(Eventually([&] { return LockWaiters(app) == 1; }));

  auto busy = port->Call(3, "server_info", {}, 300);
  REQUIRE(busy);
  CHECK(busy->call_id == 3);
  CHECK(ErrorCode(*busy) == "timeout");
  CHECK(ErrorMessage(*busy) ==
        "op \"server_info\" waited its whole 300 ms budget for a database session: all 1 "
        "sessions of the pool (pool_size 1) were busy");

  lock.Release();
  auto migrated = port->ReceiveReply(10s);
  REQUIRE(migrated);
  CHECK(migrated->call_id == 2);
  CHECK(Show(*migrated) == "ok null");
}

TEST_CASE("a cancel frame stops a blocked call, frees its session, and gets no reply",
          "[port][db]") {
  const std::string app = "port-test-cancel";
  MigrationLockHolder lock("port_cancel");
  auto port = ConnectedPort("port_cancel", 1, app);
  port->Request(2, "migrate", {}, 20'000);
  REQUIRE(Eventually([&] { return LockWaiters(app) == 1; }));

  port->Cancel(2);
  CHECK(Eventually([&] { return LockWaiters(app) == 0; }));
  auto next = port->Call(3, "server_info", {}, 5'000);
  REQUIRE(next);
  CHECK(next->call_id == 3);  // never a reply for call 2
  CHECK(next->ok());
  CHECK_FALSE(port->Receive(300ms));
  lock.Release();
}

TEST_CASE("a request reusing an id in flight is refused with an error event", "[port][db]") {
  const std::string app = "port-test-dup";
  MigrationLockHolder lock("port_dup");
  auto port = ConnectedPort("port_dup", 2, app);
  port->Request(2, "migrate", {}, 20'000);
  REQUIRE(Eventually([&] { return LockWaiters(app) == 1; }));

  port->Request(2, "ping");
  auto event = port->Receive();
  REQUIRE(event);
  auto* error = std::get_if<protocol::Event>(&*event);
  REQUIRE(error);
  CHECK(error->kind == "error");
  CHECK_THAT(Value(error->payload).Find("message")->as_string(),
             Catch::Contains("call id 2 is already in flight"));

  lock.Release();
  auto migrated = port->ReceiveReply(10s);
  REQUIRE(migrated);
  CHECK(migrated->call_id == 2);
  CHECK(migrated->ok());
  CHECK_FALSE(port->Receive(300ms));
}

TEST_CASE("shutdown with a call in flight: ok, the call is shut down, exit 0", "[port][db]") {
  const std::string app = "port-test-shutdown";
  MigrationLockHolder lock("port_shutdown");
  auto port = ConnectedPort("port_shutdown", 2, app);
  port->Request(2, "migrate", {}, 20'000);
  REQUIRE(Eventually([&] { return LockWaiters(app) == 1; }));

  const auto start = steady_clock::now();
  port->Request(3, "shutdown");
  auto first = port->ReceiveReply(2s);
  auto second = port->ReceiveReply(2s);
  REQUIRE(first);
  REQUIRE(second);
  CHECK(first->call_id == 3);
  CHECK(Show(*first) == "ok null");
  CHECK(second->call_id == 2);
  CHECK(ErrorCode(*second) == "validation");
  CHECK(ErrorMessage(*second) == "the handle was shut down");
  CHECK(port->WaitExit(1s) == 0);
  CHECK(steady_clock::now() - start < 1s);
  // The cancel went out before the process ended.
  CHECK(Eventually([&] { return LockWaiters(app) == 0; }));
  lock.Release();
}

TEST_CASE("EOF on fd 3 with a call in flight: exit 0 within a second", "[port][db]") {
  const std::string app = "port-test-eof";
  MigrationLockHolder lock("port_eof");
  auto port = ConnectedPort("port_eof", 2, app);
  port->Request(2, "migrate", {}, 20'000);
  REQUIRE(Eventually([&] { return LockWaiters(app) == 1; }));

  const auto start = steady_clock::now();
  port->CloseInput();
  CHECK(port->WaitExit(1s) == 0);
  CHECK(steady_clock::now() - start < 1s);
  CHECK(Eventually([&] { return LockWaiters(app) == 0; }));
  lock.Release();
}

}  // namespace
}  // namespace trellis::port_test
