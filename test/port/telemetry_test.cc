// Log events and the metrics op: what the BEAM's Trellis.LogBridge and
// Trellis.Metrics receive from a real port (spec/protocol.md, "Log lines" and
// op `metrics`).
#include <catch2/catch.hpp>

#include <functional>
#include <map>
#include <thread>

#include "port_process.h"
#include "test_cluster.h"

namespace trellis::port_test {
namespace {

using protocol::MakeMap;
using protocol::Map;
using protocol::Value;
using std::chrono::steady_clock;

std::string Text(const protocol::Event& event, std::string_view key) {
  const Value payload(event.payload);
  const Value* value = payload.Find(key);
  return value && value->is_string() ? value->as_string() : "";
}

std::unique_ptr<PortProcess> Port(const std::string& level) {
  auto port = std::make_unique<PortProcess>(std::vector<std::string>{"--log-level", level});
  REQUIRE(port->ReceiveHello());
  return port;
}

void Connect(PortProcess& port, uint64_t id, const std::string& url, const std::string& schema,
             int64_t drain_threads = 0) {
  auto reply = port.Call(
      id, "connect",
      MakeMap(
          {{"url", url}, {"schema", schema}, {"pool_size", 2}, {"drain_threads", drain_threads}}));
  REQUIRE(reply);
  INFO(Show(*reply));
  REQUIRE(reply->ok());
}

void LogTestLine(PortProcess& port, uint64_t id, const std::string& level,
                 const std::string& message, int64_t count = 1) {
  auto reply = port.Call(id, "log_test_line",
                         MakeMap({{"level", level}, {"message", message}, {"count", count}}));
  REQUIRE(reply);
  INFO(Show(*reply));
  REQUIRE(reply->ok());
}

// The log event whose message contains `needle`, skipping others.
std::optional<protocol::Event> LogContaining(PortProcess& port, const std::string& needle) {
  while (auto event = port.ReceiveLog()) {
    if (Text(*event, "message").find(needle) != std::string::npos) return event;
  }
  return std::nullopt;
}

// The metrics op's families, by name.
std::map<std::string, Value> Metrics(PortProcess& port, uint64_t id) {
  auto reply = port.Call(id, "metrics");
  REQUIRE(reply);
  REQUIRE(reply->ok());
  std::map<std::string, Value> families;
  for (const auto& family : OkValue(*reply).Find("families")->as_array()) {
    families.emplace(family.Find("name")->as_string(), family);
  }
  return families;
}

// The series of `family` with these label values; nil when there is none.
Value Series(const std::map<std::string, Value>& families, const std::string& family,
             const protocol::Array& labels) {
  auto it = families.find(family);
  if (it == families.end()) return Value();
  for (const auto& series : it->second.Find("series")->as_array()) {
    if (*series.Find("labels") == Value(labels)) return series;
  }
  return Value();
}

int64_t Number(const std::map<std::string, Value>& families, const std::string& family,
               const protocol::Array& labels = {}) {
  const Value series = Series(families, family, labels);
  if (series.is_nil()) return 0;
  return *series.Find("value")->as_int64();
}

TEST_CASE("a line of each level arrives as a log event naming its level, target and instance",
          "[port][log]") {
  auto port = Port("debug");
  uint64_t id = 1;
  for (const std::string level : {"debug", "info", "warning", "error", "critical"}) {
    LogTestLine(*port, id++, level, "a " + level + " line");
    auto event = port->ReceiveLog();
    REQUIRE(event);
    CHECK(event->kind == "log");
    CHECK(Text(*event, "level") == level);
    CHECK(Text(*event, "target") == "trellis::port");
    // Before connect the instance is unknown, and the text says so.
    CHECK(Text(*event, "instance") == "-");
    CHECK(Text(*event, "message") == "trellis_instance=- log_test_line: a " + level + " line");
    const Value payload(event->payload);
    const Value* time_us = payload.Find("time_us");
    REQUIRE(time_us);
    CHECK(time_us->as_int64() > 1'600'000'000'000'000);  // after 2020, in microseconds
  }
}

TEST_CASE("after connect every line names the instance, and no line shows the password",
          "[port][log][db]") {
  auto port = Port("info");
  Connect(*port, 1, WithPassword(ClusterUrl(), "log-secret-pw"), "port_logs");
  auto connected = LogContaining(*port, "connected to");
  REQUIRE(connected);
  const std::string message = Text(*connected, "message");
  CHECK_THAT(message, Catch::StartsWith("trellis_instance=postgres/port_logs connected to "
                                        "postgresql://postgres:***@"));
  CHECK(message.find("log-secret-pw") == std::string::npos);
  CHECK(Text(*connected, "level") == "info");
  CHECK(Text(*connected, "instance") == "postgres/port_logs");

  LogTestLine(*port, 2, "warning", "after connect");
  auto line = port->ReceiveLog();
  REQUIRE(line);
  CHECK(Text(*line, "message") ==
        "trellis_instance=postgres/port_logs log_test_line: after connect");
}

TEST_CASE("--log-level and set_log_level choose the most verbose level sent", "[port][log]") {
  auto port = Port("warning");
  // Lines are sent in the order they were logged, so the first to arrive
  // shows that the info line before it was never sent.
  LogTestLine(*port, 1, "info", "quiet");
  LogTestLine(*port, 2, "warning", "loud");
  auto first = port->ReceiveLog();
  REQUIRE(first);
  CHECK(Text(*first, "message") == "trellis_instance=- log_test_line: loud");

  auto debug = port->Call(3, "set_log_level", MakeMap({{"level", "debug"}}));
  REQUIRE(debug);
  CHECK(Show(*debug) == "ok null");
  LogTestLine(*port, 4, "debug", "now debug");
  auto now_debug = port->ReceiveLog();
  REQUIRE(now_debug);
  CHECK(Text(*now_debug, "message") == "trellis_instance=- log_test_line: now debug");

  REQUIRE(port->Call(5, "set_log_level", MakeMap({{"level", "off"}})));
  LogTestLine(*port, 6, "critical", "unsent");
  REQUIRE(port->Call(7, "set_log_level", MakeMap({{"level", "error"}})));
  LogTestLine(*port, 8, "error", "sent again");
  auto after_off = port->ReceiveLog();
  REQUIRE(after_off);
  CHECK(Text(*after_off, "message") == "trellis_instance=- log_test_line: sent again");

  auto bad = port->Call(9, "set_log_level", MakeMap({{"level", "loud"}}));
  REQUIRE(bad);
  CHECK(ErrorCode(*bad) == "validation");
  CHECK(ErrorMessage(*bad) ==
        "argument \"level\" must be debug, info, warning, error, critical or off, got \"loud\"");
  auto bad_line = port->Call(10, "log_test_line", MakeMap({{"level", "off"}}));
  REQUIRE(bad_line);
  CHECK(ErrorCode(*bad_line) == "validation");
}

TEST_CASE("--log-level with an unknown level is a bad command line", "[port][log][cli]") {
  ToolRun run = RunTool({"--log-level", "loud"});
  CHECK(run.status == 2);
  CHECK(run.out.empty());
}

TEST_CASE("lines past the bounded queue are dropped, counted, and a warning says how many",
          "[port][log]") {
  auto port = Port("debug");
  // Logged on the io thread, which sends nothing until the op returns: the
  // queue holds the first 1024 lines and drops the other 3976.
  LogTestLine(*port, 1, "debug", "storm", 5000);
  for (int i = 1; i <= 1024; ++i) {
    auto line = port->ReceiveLog();
    REQUIRE(line);
    REQUIRE(Text(*line, "message") ==
            "trellis_instance=- log_test_line: storm (" + std::to_string(i) + "/5000)");
  }
  auto warning = port->ReceiveLog();
  REQUIRE(warning);
  CHECK(Text(*warning, "level") == "warning");
  CHECK(Text(*warning, "message") ==
        "trellis_instance=- dropped 3976 log line(s): the BEAM did not read them in time");
  CHECK(Number(Metrics(*port, 2), "trellis_log_lines_dropped_total") == 3976);
  // The queue works again afterwards.
  LogTestLine(*port, 3, "info", "calm");
  auto calm = port->ReceiveLog();
  REQUIRE(calm);
  CHECK(Text(*calm, "message") == "trellis_instance=- log_test_line: calm");
}

TEST_CASE("calls are answered while a background thread floods the log", "[port][log]") {
  auto port = Port("debug");
  auto storm = port->Call(
      1, "log_test_line",
      MakeMap(
          {{"level", "debug"}, {"message", "storm"}, {"count", 200'000}, {"background", true}}));
  REQUIRE(storm);
  REQUIRE(storm->ok());
  for (uint64_t id = 2; id < 202; ++id) {
    auto reply = port->Call(id, "ping");
    REQUIRE(reply);
    CHECK(reply->call_id == id);
    CHECK(Show(*reply) == "ok \"pong\"");
  }
}

TEST_CASE("metrics: every family with its type and help, and counters that move with calls",
          "[port][metrics]") {
  auto port = Port("info");
  auto before = Metrics(*port, 1);
  for (const std::string name :
       {"trellis_calls_total", "trellis_call_duration_seconds", "trellis_pool_connections_open",
        "trellis_pool_connections_in_use", "trellis_pool_connections_max",
        "trellis_port_frames_total", "trellis_port_bytes_total", "trellis_log_lines_total",
        "trellis_log_lines_dropped_total", "trellis_workers", "trellis_staging_elected",
        "trellis_drain_pages_total", "trellis_drain_keys_total", "trellis_drain_pages_failed_total",
        "trellis_capture_rows_staged_total", "trellis_backfill_rows_total",
        "trellis_stage_wakes_total", "trellis_stage_writes_staged_total",
        "trellis_remote_wakes_total"}) {
    INFO(name);
    REQUIRE(before.count(name));
    CHECK_FALSE(before.at(name).Find("help")->as_string().empty());
  }
  CHECK(*before.at("trellis_calls_total").Find("type") == Value("counter"));
  CHECK(*before.at("trellis_calls_total").Find("labels") == Value(protocol::Array{"op", "result"}));
  CHECK(*before.at("trellis_workers").Find("type") == Value("gauge"));
  CHECK(*before.at("trellis_call_duration_seconds").Find("type") == Value("histogram"));
  CHECK(Number(before, "trellis_workers", {"drain"}) == 0);
  CHECK(Number(before, "trellis_workers", {"staging"}) == 0);

  const int64_t pings = Number(before, "trellis_calls_total", {"ping", "ok"});
  const int64_t frames_in = Number(before, "trellis_port_frames_total", {"in"});
  for (uint64_t id = 2; id < 5; ++id) REQUIRE(port->Call(id, "ping"));
  REQUIRE(port->Call(5, "no_such_op"));
  auto after = Metrics(*port, 6);
  CHECK(Number(after, "trellis_calls_total", {"ping", "ok"}) == pings + 3);
  CHECK(Number(after, "trellis_calls_total", {"unknown", "validation"}) == 1);
  CHECK(Number(after, "trellis_calls_total", {"metrics", "ok"}) == 1);
  // 3 pings, the unknown op and this metrics request.
  CHECK(Number(after, "trellis_port_frames_total", {"in"}) == frames_in + 5);
  CHECK(Number(after, "trellis_port_bytes_total", {"out"}) > 0);

  const Value histogram = Series(after, "trellis_call_duration_seconds", {"ping"});
  REQUIRE_FALSE(histogram.is_nil());
  const auto& bounds = after.at("trellis_call_duration_seconds").Find("buckets")->as_array();
  const auto& counts = histogram.Find("counts")->as_array();
  REQUIRE(counts.size() == bounds.size());
  CHECK(*histogram.Find("count")->as_int64() == pings + 3);
  int64_t previous = 0;
  for (const auto& count : counts) {
    CHECK(*count.as_int64() >= previous);  // cumulative
    previous = *count.as_int64();
  }
  CHECK(previous <= *histogram.Find("count")->as_int64());
}

TEST_CASE("metrics after connect: the instance, the pool and the handle's workers",
          "[port][metrics][db]") {
  auto port = Port("info");
  auto unconnected = port->Call(1, "metrics");
  REQUIRE(unconnected);
  CHECK(OkValue(*unconnected).Find("instance")->is_nil());

  Connect(*port, 2, ClusterUrl(), "port_metrics", /*drain_threads=*/2);
  auto reply = port->Call(3, "metrics");
  REQUIRE(reply);
  CHECK(*OkValue(*reply).Find("instance") == Value("postgres/port_metrics"));
  auto families = Metrics(*port, 4);
  CHECK(Number(families, "trellis_pool_connections_max") == 2);
  CHECK(Number(families, "trellis_pool_connections_open") >= 1);
  CHECK(Number(families, "trellis_pool_connections_in_use") == 0);
  CHECK(Number(families, "trellis_staging_elected") == 0);
  uint64_t id = 5;
  CHECK(
      Eventually([&] { return Number(Metrics(*port, id++), "trellis_workers", {"drain"}) == 2; }));
}

}  // namespace
}  // namespace trellis::port_test

namespace trellis::port_test {
namespace {

// A `metrics` event's families, by name; empty when `message` is not one.
std::map<std::string, Value> PushedFamilies(const protocol::Message& message) {
  std::map<std::string, Value> families;
  const auto* event = std::get_if<protocol::Event>(&message);
  if (!event || event->kind != "metrics") return families;
  const Value payload(event->payload);
  for (const auto& family : payload.Find("families")->as_array()) {
    families.emplace(family.Find("name")->as_string(), family);
  }
  return families;
}

TEST_CASE("metrics_push: changes as a metrics event before its reply, then periodically",
          "[port][metrics]") {
  auto port = Port("off");
  for (uint64_t id = 1; id <= 3; ++id) REQUIRE(port->Call(id, "ping"));

  // Off by default: nothing is pushed until asked.
  CHECK_FALSE(port->Receive(Ms(300)));

  port->Request(4, "metrics_push");
  auto first = port->Receive();
  REQUIRE(first);
  auto pushed = PushedFamilies(*first);
  REQUIRE(pushed.count("trellis_calls_total"));
  // The first push carries everything since the start.
  CHECK(Number(pushed, "trellis_calls_total", {"ping", "ok"}) == 3);
  CHECK(Number(pushed, "trellis_pool_connections_max", {}) == 0);
  auto reply = port->Receive();
  REQUIRE(reply);
  REQUIRE(std::holds_alternative<protocol::Reply>(*reply));

  // The next push carries only what changed: counters as increases, and no
  // gauge that kept its value.
  REQUIRE(port->Call(5, "ping"));
  port->Request(6, "metrics_push", MakeMap({{"interval_ms", 100}}));
  auto second = port->Receive();
  REQUIRE(second);
  pushed = PushedFamilies(*second);
  CHECK(Number(pushed, "trellis_calls_total", {"ping", "ok"}) == 1);
  CHECK(pushed.count("trellis_pool_connections_max") == 0);
  REQUIRE(port->ReceiveReply());

  // With an interval, changes arrive unasked.
  REQUIRE(port->Call(7, "ping"));
  bool saw_ping = false;
  for (int i = 0; i < 10 && !saw_ping; ++i) {
    auto message = port->Receive(Ms(1000));
    REQUIRE(message);
    pushed = PushedFamilies(*message);
    saw_ping = pushed.count("trellis_calls_total") &&
               !Series(pushed, "trellis_calls_total", {"ping", "ok"}).is_nil();
  }
  CHECK(saw_ping);

  auto bad = port->Call(8, "metrics_push", MakeMap({{"interval_ms", -1}}));
  REQUIRE(bad);
  CHECK_FALSE(bad->ok());
}

TEST_CASE("metrics_push: the port pushes its last changes as it shuts down", "[port][metrics]") {
  auto port = Port("off");
  REQUIRE(port->Call(1, "metrics_push", MakeMap({{"interval_ms", 3'600'000}})));
  REQUIRE(port->Call(2, "ping"));
  port->Request(3, "shutdown");
  bool saw_ping = false;
  while (auto message = port->Receive(Ms(2000))) {
    auto pushed = PushedFamilies(*message);
    if (pushed.count("trellis_calls_total") &&
        !Series(pushed, "trellis_calls_total", {"ping", "ok"}).is_nil()) {
      saw_ping = true;
    }
  }
  CHECK(saw_ping);
}

}  // namespace
}  // namespace trellis::port_test
