// The port's side of spec/protocol.md sections 1-5 and 8, through the real
// binary: handshake, routing, bad input, framing loss. No database needed.
#include <catch2/catch.hpp>

#include <map>

#include "port_process.h"

namespace trellis::port_test {
namespace {

using protocol::MakeMap;
using protocol::Map;
using protocol::Value;

// [0, id, "ping", {}] as raw msgpack, for tests that corrupt it.
std::string PingBody(uint8_t id) {
  return std::string{'\x94', '\x00', static_cast<char>(id), '\xa4'} + "ping" + '\x80';
}

std::string FrameHeader(uint32_t length) {
  return {static_cast<char>(length >> 24), static_cast<char>(length >> 16),
          static_cast<char>(length >> 8), static_cast<char>(length)};
}

std::optional<protocol::Event> ReceiveEvent(PortProcess& port) {
  auto message = port.Receive();
  if (!message) return std::nullopt;
  if (auto* event = std::get_if<protocol::Event>(&*message)) return *event;
  return std::nullopt;
}

TEST_CASE("the port speaks first: hello with the protocol version and closed sets", "[port]") {
  PortProcess port;
  auto hello = port.ReceiveHello();
  REQUIRE(hello);
  const Value payload(hello->payload);
  REQUIRE(payload.Find("protocol"));
  CHECK(*payload.Find("protocol") == Value(protocol::Array{1, 0}));
  CHECK(*payload.Find("engine_version") == Value(TRELLIS_VERSION));
  protocol::Array codes;
  for (const auto& code : protocol::ErrorCodes()) codes.emplace_back(code);
  CHECK(*payload.Find("error_codes") == Value(codes));
  const Value* enums = payload.Find("enums");
  REQUIRE(enums);
  REQUIRE(enums->Find("status"));
  CHECK(*enums->Find("status") == Value(protocol::Array{"waiting_to_backfill", "backfilling",
                                                        "catching_up", "live", "paused"}));
}

TEST_CASE("ping answers pong", "[port]") {
  PortProcess port;
  REQUIRE(port.ReceiveHello());
  auto reply = port.Call(1, "ping");
  REQUIRE(reply);
  CHECK(reply->call_id == 1);
  CHECK(Show(*reply) == "ok \"pong\"");
}

TEST_CASE("echo returns the value it was given, nested values included", "[port]") {
  PortProcess port;
  REQUIRE(port.ReceiveHello());
  const Value value(MakeMap({{"list", protocol::Array{1, -2, 3.5, nullptr, true}},
                             {"bin", protocol::Binary{std::string("\x00\xff", 2)}},
                             {"text", "héllo"}}));
  auto reply = port.Call(42, "echo", MakeMap({{"value", value}}));
  REQUIRE(reply);
  CHECK(reply->call_id == 42);
  REQUIRE(reply->ok());
  CHECK(OkValue(*reply) == value);
}

TEST_CASE("echo without its argument is a validation error naming it", "[port]") {
  PortProcess port;
  REQUIRE(port.ReceiveHello());
  auto reply = port.Call(1, "echo");
  REQUIRE(reply);
  CHECK(ErrorCode(*reply) == "validation");
  CHECK(ErrorMessage(*reply) == "missing required argument \"value\" (any value)");
}

TEST_CASE("an unknown op is a validation error naming the op", "[port]") {
  PortProcess port;
  REQUIRE(port.ReceiveHello());
  auto reply = port.Call(5, "frobnicate");
  REQUIRE(reply);
  CHECK(reply->call_id == 5);
  CHECK(ErrorCode(*reply) == "validation");
  CHECK(ErrorMessage(*reply) == "unknown op \"frobnicate\"");
}

TEST_CASE("a string argument with a NUL byte or invalid UTF-8 is refused naming it and the byte",
          "[port]") {
  PortProcess port;
  REQUIRE(port.ReceiveHello());
  // connect checks its arguments before it touches the network, so no
  // database is needed: a NUL would otherwise cut the URL short in libpq.
  auto nul =
      port.Call(1, "connect", MakeMap({{"url", std::string("postgresql://h/db\0junk", 22)}}));
  REQUIRE(nul);
  CHECK(ErrorCode(*nul) == "validation");
  CHECK(ErrorMessage(*nul) ==
        "argument \"url\" contains a NUL byte at byte 17; send UTF-8 text without NUL bytes");

  auto bad_utf8 =
      port.Call(2, "connect", MakeMap({{"url", "postgresql://h/db"}, {"schema", "tr\xFFllis"}}));
  REQUIRE(bad_utf8);
  CHECK(ErrorCode(*bad_utf8) == "validation");
  CHECK(ErrorMessage(*bad_utf8) ==
        "argument \"schema\" contains an invalid UTF-8 sequence at byte 2; send UTF-8 text "
        "without NUL bytes");
}

TEST_CASE("database ops before connect are refused: not connected", "[port]") {
  PortProcess port;
  REQUIRE(port.ReceiveHello());
  for (const char* op : {"server_info", "migrate", "config"}) {
    auto reply = port.Call(1, op);
    REQUIRE(reply);
    CHECK(ErrorCode(*reply) == "validation");
    CHECK(ErrorMessage(*reply) == "not connected: call connect first");
  }
}

TEST_CASE("an undecodable body with a readable call id gets a protocol error reply", "[port]") {
  PortProcess port;
  REQUIRE(port.ReceiveHello());
  port.SendBody(PingBody(7) + '\xc0');  // one trailing byte after the request
  auto reply = port.ReceiveReply();
  REQUIRE(reply);
  CHECK(reply->call_id == 7);
  CHECK(ErrorCode(*reply) == "protocol");
  CHECK_THAT(ErrorMessage(*reply), Catch::Contains("trailing"));

  SECTION("and the next request still works") {
    auto next = port.Call(8, "ping");
    REQUIRE(next);
    CHECK(next->call_id == 8);
    CHECK(Show(*next) == "ok \"pong\"");
  }
}

TEST_CASE("a request of the wrong shape with a call id gets a protocol error reply", "[port]") {
  PortProcess port;
  REQUIRE(port.ReceiveHello());
  // [0, 9, "ping", 1]: args is not a map.
  port.SendBody(std::string{'\x94', '\x00', '\x09', '\xa4'} + "ping" + '\x01');
  auto reply = port.ReceiveReply();
  REQUIRE(reply);
  CHECK(reply->call_id == 9);
  CHECK(ErrorCode(*reply) == "protocol");
  CHECK_THAT(ErrorMessage(*reply), Catch::Contains("args"));
}

TEST_CASE("an undecodable body without a call id gets an error event", "[port]") {
  PortProcess port;
  REQUIRE(port.ReceiveHello());
  port.SendBody("\xc1");  // the never-used byte
  auto event = ReceiveEvent(port);
  REQUIRE(event);
  CHECK(event->kind == "error");
  const Value payload(event->payload);
  CHECK(*payload.Find("code") == Value("protocol"));
  CHECK_THAT(payload.Find("message")->as_string(), Catch::Contains("undecodable"));

  auto next = port.Call(2, "ping");
  REQUIRE(next);
  CHECK(Show(*next) == "ok \"pong\"");
}

TEST_CASE("a zero-length frame gets an error event and the port keeps serving", "[port]") {
  PortProcess port;
  REQUIRE(port.ReceiveHello());
  port.SendBody("");
  auto event = ReceiveEvent(port);
  REQUIRE(event);
  CHECK(event->kind == "error");
  CHECK(*Value(event->payload).Find("code") == Value("protocol"));
  auto next = port.Call(3, "ping");
  REQUIRE(next);
  CHECK(next->call_id == 3);
  CHECK(next->ok());
}

TEST_CASE("messages the BEAM never sends get an error event", "[port]") {
  PortProcess port;
  REQUIRE(port.ReceiveHello());
  port.Send(protocol::Reply{4, Value("ok")});
  auto event = ReceiveEvent(port);
  REQUIRE(event);
  CHECK(event->kind == "error");
  CHECK_THAT(Value(event->payload).Find("message")->as_string(), Catch::Contains("reply"));
  auto next = port.Call(5, "ping");
  REQUIRE(next);
  CHECK(next->ok());
}

TEST_CASE("a request split at every byte boundary is still served", "[port]") {
  PortProcess port;
  REQUIRE(port.ReceiveHello());
  const std::string frame = FrameHeader(static_cast<uint32_t>(PingBody(11).size())) + PingBody(11);
  for (char byte : frame) port.SendRaw(std::string(1, byte));
  auto reply = port.ReceiveReply();
  REQUIRE(reply);
  CHECK(reply->call_id == 11);
  CHECK(Show(*reply) == "ok \"pong\"");
}

TEST_CASE("a cancel for an unknown call gets no reply", "[port]") {
  PortProcess port;
  REQUIRE(port.ReceiveHello());
  port.Cancel(99);
  auto reply = port.Call(1, "ping");
  REQUIRE(reply);
  CHECK(reply->call_id == 1);
  CHECK_FALSE(port.Receive(200ms));
}

TEST_CASE("200 concurrent echo requests are each answered once, with their own value", "[port]") {
  PortProcess port;
  REQUIRE(port.ReceiveHello());
  constexpr uint64_t kCalls = 200;
  std::string burst;
  for (uint64_t id = 1; id <= kCalls; ++id) {
    const std::string body = protocol::EncodeMessage(protocol::Request{
        id, "echo", MakeMap({{"value", "value-" + std::to_string(id * 7)}}), std::nullopt});
    burst += protocol::EncodeFrame(body);
  }
  port.SendRaw(burst);
  std::map<uint64_t, Value> replies;
  for (uint64_t i = 0; i < kCalls; ++i) {
    auto reply = port.ReceiveReply();
    REQUIRE(reply);
    REQUIRE(reply->ok());
    CHECK(replies.emplace(reply->call_id, OkValue(*reply)).second);  // never twice
  }
  REQUIRE(replies.size() == kCalls);
  for (const auto& [id, value] : replies) {
    CHECK(value == Value("value-" + std::to_string(id * 7)));
  }
  CHECK_FALSE(port.Receive(200ms));
}

TEST_CASE("a length prefix over 16 MiB: error event, then exit status 3", "[port]") {
  PortProcess port;
  REQUIRE(port.ReceiveHello());
  // A valid ping in the same write as the bad prefix is still answered.
  port.SendRaw(protocol::EncodeFrame(PingBody(1)) + FrameHeader(16u * 1024u * 1024u + 1u) +
               "more bytes that can never be framed");
  auto reply = port.ReceiveReply();
  REQUIRE(reply);
  CHECK(reply->call_id == 1);
  auto event = ReceiveEvent(port);
  REQUIRE(event);
  CHECK(event->kind == "error");
  const Value payload(event->payload);
  CHECK(*payload.Find("code") == Value("protocol"));
  CHECK_THAT(payload.Find("message")->as_string(), Catch::Contains("16777217"));
  CHECK(port.OutputClosed(2s));
  CHECK(port.WaitExit(2s) == 3);
}

TEST_CASE("a frame of exactly 16 MiB is read, not a framing loss", "[port]") {
  PortProcess port;
  REQUIRE(port.ReceiveHello());
  // A 16 MiB body of msgpack nils is not one value: an error event, and the
  // port serves on.
  port.SendBody(std::string(16u * 1024u * 1024u, '\xc0'));
  auto event = ReceiveEvent(port);
  REQUIRE(event);
  CHECK(event->kind == "error");
  auto reply = port.Call(2, "ping");
  REQUIRE(reply);
  CHECK(reply->ok());
}

}  // namespace
}  // namespace trellis::port_test
