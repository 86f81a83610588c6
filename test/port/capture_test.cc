// --record, `trellis-port decode` and `trellis-port replay`. The capture is
// read and edited here with a reader of this file's own, written from the
// format in spec/protocol.md section 9, so the format stays as specified.
#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include "port_process.h"
#include "test_cluster.h"

namespace trellis::port_test {
namespace {

using protocol::MakeMap;
using protocol::Value;

struct Record {
  uint8_t direction;  // 0 in, 1 out
  uint64_t micros;
  std::string body;
};

uint64_t BigEndian(const std::string& bytes, size_t pos, int width) {
  uint64_t value = 0;
  for (int i = 0; i < width; ++i) value = (value << 8) | static_cast<unsigned char>(bytes[pos + i]);
  return value;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::vector<Record> ParseCapture(const std::string& bytes) {
  REQUIRE(bytes.substr(0, 8) == "TRLSCAP1");
  std::vector<Record> records;
  size_t pos = 8;
  while (pos < bytes.size()) {
    REQUIRE(bytes.size() - pos >= 13);
    Record record{static_cast<uint8_t>(bytes[pos]), BigEndian(bytes, pos + 1, 8), ""};
    const uint64_t length = BigEndian(bytes, pos + 9, 4);
    pos += 13;
    REQUIRE(bytes.size() - pos >= length);
    record.body = bytes.substr(pos, length);
    pos += length;
    records.push_back(std::move(record));
  }
  return records;
}

void WriteCapture(const std::string& path, const std::vector<Record>& records) {
  std::string bytes = "TRLSCAP1";
  for (const auto& record : records) {
    bytes.push_back(static_cast<char>(record.direction));
    for (int shift = 56; shift >= 0; shift -= 8)
      bytes.push_back(static_cast<char>(record.micros >> shift));
    const auto length = static_cast<uint32_t>(record.body.size());
    for (int shift = 24; shift >= 0; shift -= 8)
      bytes.push_back(static_cast<char>(length >> shift));
    bytes += record.body;
  }
  std::ofstream(path, std::ios::binary) << bytes;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::string TempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          (name + "-" + std::to_string(getpid()) + ".trellis-capture"))
      .string();
}

// Records a session: connect (with a password in the URL), ping, echo,
// server_info, an unknown op, shutdown. Without log events (they would be
// records too; telemetry_test.cc covers them).
std::string RecordSession() {
  const std::string path = TempPath("port-capture");
  PortProcess port({"--record", path, "--log-level", "off"});
  REQUIRE(port.ReceiveHello());
  auto connected = port.Call(1, "connect",
                             MakeMap({{"url", WithPassword(ClusterUrl(), "capture-secret-pw")},
                                      {"schema", "port_capture"},
                                      {"pool_size", 2}}),
                             5'000);
  REQUIRE(connected);
  INFO(Show(*connected));
  REQUIRE(connected->ok());
  REQUIRE(port.Call(2, "ping"));
  REQUIRE(port.Call(3, "echo", MakeMap({{"value", protocol::Array{1, "two"}}})));
  REQUIRE(port.Call(4, "server_info"));
  REQUIRE(port.Call(5, "nope"));
  REQUIRE(port.Call(6, "shutdown"));
  REQUIRE(port.WaitExit(2s) == 0);
  return path;
}

TEST_CASE("--record captures every frame in and out, never the password", "[port][capture]") {
  const std::string path = RecordSession();
  const std::string bytes = ReadFile(path);
  CHECK(bytes.find("capture-secret-pw") == std::string::npos);
  const auto records = ParseCapture(bytes);
  // hello + 6 requests + 6 replies
  REQUIRE(records.size() == 13);
  CHECK(records[0].direction == 1);
  CHECK(records[1].direction == 0);
  uint64_t last = 0;
  for (const auto& record : records) {
    CHECK(record.micros >= last);  // monotonic
    last = record.micros;
  }
  auto connect = protocol::DecodeMessage(records[1].body);
  auto* message = std::get_if<protocol::Message>(&connect);
  REQUIRE(message);
  auto* request = std::get_if<protocol::Request>(message);
  REQUIRE(request);
  CHECK(request->op == "connect");
  CHECK(*Value(request->args).Find("url") == Value(WithPassword(ClusterUrl(), "***")));
  CHECK(request->timeout_ms == 5'000u);
  std::remove(path.c_str());
}

TEST_CASE("decode prints one readable line per frame", "[port][capture]") {
  const std::string path = RecordSession();
  ToolRun run = RunTool({"decode", path});
  CHECK(run.status == 0);
  const auto lines = Lines(run.out);
  REQUIRE(lines.size() == 13);
  CHECK_THAT(
      lines[0],
      Catch::Matches(R"(\+ *[0-9]+\.[0-9]{3} ms  out  event   hello \{"protocol": \[1, 0\].*)"));
  CHECK_THAT(lines[1],
             Catch::Contains("in   request id=1 connect {\"url\": \"postgresql://postgres:***@"));
  CHECK_THAT(lines[1], Catch::EndsWith("timeout_ms=5000"));
  CHECK_THAT(lines[2],
             Catch::Contains("out  reply   id=1 ok {\"instance\": \"postgres/port_capture\""));
  CHECK_THAT(lines[4], Catch::EndsWith("out  reply   id=2 ok \"pong\""));
  CHECK_THAT(lines[6], Catch::EndsWith("out  reply   id=3 ok [1, \"two\"]"));
  CHECK_THAT(lines[10], Catch::Contains("out  reply   id=5 error {\"code\": \"validation\""));
  CHECK(run.out.find("capture-secret-pw") == std::string::npos);
  std::remove(path.c_str());
}

TEST_CASE("decode refuses a file that is not a capture", "[port][capture]") {
  const std::string path = TempPath("port-not-capture");
  std::ofstream(path) << "hello";
  ToolRun run = RunTool({"decode", path});
  CHECK(run.status == 1);
  CHECK(run.out.empty());
  CHECK(RunTool({"decode", path + ".missing"}).status == 1);
  std::remove(path.c_str());
}

TEST_CASE("replay re-runs a capture: same replies exit 0, a changed one exits 1",
          "[port][capture]") {
  const std::string path = RecordSession();

  SECTION("against the same database every reply matches") {
    ToolRun run = RunTool({"replay", path, "--url", ClusterUrl()});
    INFO(run.out);
    CHECK(run.status == 0);
    CHECK_THAT(run.out, Catch::EndsWith("replayed 6 calls: 0 differ, 0 skipped\n"));
  }

  SECTION("a tampered expectation is reported and exits 1") {
    auto records = ParseCapture(ReadFile(path));
    bool tampered = false;
    for (auto& record : records) {
      auto decoded = protocol::DecodeMessage(record.body);
      auto* message = std::get_if<protocol::Message>(&decoded);
      if (record.direction != 1 || !message) continue;
      auto* reply = std::get_if<protocol::Reply>(message);
      if (reply && reply->call_id == 3) {
        reply->result = Value(protocol::Array{1, "three"});
        record.body = protocol::EncodeMessage(*reply);
        tampered = true;
      }
    }
    REQUIRE(tampered);
    const std::string edited = TempPath("port-capture-tampered");
    WriteCapture(edited, records);
    ToolRun run = RunTool({"replay", edited, "--url", ClusterUrl()});
    INFO(run.out);
    CHECK(run.status == 1);
    CHECK_THAT(run.out, Catch::Contains("call 3 (echo) differs:\n"
                                        "  recorded: ok [1, \"three\"]\n"
                                        "  replayed: ok [1, \"two\"]\n"));
    CHECK_THAT(run.out, Catch::EndsWith("replayed 6 calls: 1 differ, 0 skipped\n"));
    std::remove(edited.c_str());
  }
  std::remove(path.c_str());
}

}  // namespace
}  // namespace trellis::port_test
