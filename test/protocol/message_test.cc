// DecodeMessage / EncodeMessage / MessageToValue (spec/protocol.md section 3).
#include <string>

#include <catch2/catch.hpp>

#include "random_values.h"
#include "trellis/protocol/codec.h"
#include "trellis/protocol/frame.h"
#include "vectors.h"

namespace trellis::protocol {
namespace {

using testing::BytesToHex;
using testing::HexToBytes;

DecodeError ErrorOf(const Value& body) {
  auto decoded = DecodeMessage(EncodeValue(body));
  REQUIRE(std::holds_alternative<DecodeError>(decoded));
  return std::get<DecodeError>(decoded);
}

Message MessageOf(std::string_view bytes) {
  auto decoded = DecodeMessage(bytes);
  if (const auto* e = std::get_if<DecodeError>(&decoded)) FAIL(e->message);
  return std::get<Message>(std::move(decoded));
}

TEST_CASE("messages encode to the exact bytes of the spec", "[message]") {
  CHECK(BytesToHex(EncodeMessage(Request{7, "ping", {}, std::nullopt})) == "940007a470696e6780");
  CHECK(BytesToHex(EncodeMessage(Request{8, "ping", {}, 100})) == "950008a470696e678064");
  CHECK(BytesToHex(EncodeMessage(Reply{7, Value("pong")})) == "940107a26f6ba4706f6e67");
  CHECK(BytesToHex(EncodeMessage(Cancel{3})) == "920203");
  CHECK(BytesToHex(EncodeMessage(Event{"log", {}})) == "9303a36c6f6780");
  // Error fields go out in a fixed order: code, message, sqlstate, detail, hint.
  const ErrorInfo error{"database", "boom", "22012", std::nullopt, "h"};
  CHECK(
      EncodeMessage(Reply{1, error}) ==
      EncodeValue(Array{
          1, 1, "error",
          MakeMap(
              {{"code", "database"}, {"message", "boom"}, {"sqlstate", "22012"}, {"hint", "h"}})}));
}

TEST_CASE("EncodeMessage writes what MessageToValue describes", "[message][property]") {
  testing::RandomValues random(99);
  for (int i = 0; i < 2000; ++i) {
    const Message message = random.AnyMessage();
    const std::string bytes = EncodeMessage(message);
    REQUIRE(bytes == EncodeValue(MessageToValue(message)));
    auto decoded = DecodeMessage(bytes);
    if (const auto* e = std::get_if<DecodeError>(&decoded)) FAIL(e->message);
    REQUIRE(testing::SameMessage(std::get<Message>(decoded), message));
  }
}

TEST_CASE("a request decodes into its fields", "[message]") {
  const Message m = MessageOf(EncodeValue(
      Array{0, 42, "status", MakeMap({{"transform", "widget_prices"}, {"limit", 5}}), 250}));
  const auto& request = std::get<Request>(m);
  CHECK(request.call_id == 42);
  CHECK(request.op == "status");
  CHECK(request.args == MakeMap({{"transform", "widget_prices"}, {"limit", 5}}));
  CHECK(request.timeout_ms == std::optional<uint64_t>(250));
  CHECK(Value(request.args).Find("limit")->as_int64() == 5);
}

TEST_CASE("a reply error keeps the optional fields it had", "[message]") {
  const Message m = MessageOf(EncodeValue(
      Array{1, 9, "error",
            MakeMap({{"message", "no such transform"}, {"code", "not_found"}, {"x", 1}})}));
  const auto& reply = std::get<Reply>(m);
  CHECK_FALSE(reply.ok());
  CHECK(std::get<ErrorInfo>(reply.result) ==
        ErrorInfo{"not_found", "no such transform", std::nullopt, std::nullopt, std::nullopt});
}

TEST_CASE("shape errors explain what is wrong and carry the call id", "[message]") {
  auto op = ErrorOf(Array{0, 7, 5, Map{}});
  CHECK(op.kind == DecodeErrorKind::kBadShape);
  CHECK(op.message == "bad_shape: op must be a str, got int");
  CHECK(op.call_id == std::optional<uint64_t>(7));

  auto args = ErrorOf(Array{0, 7, "ping", Array{}});
  CHECK(args.message == "bad_shape: args must be a map, got array");

  auto repeated = ErrorOf(Array{0, 7, "ping", MakeMap({{"b", 1}, {"a", 1}, {"b", 2}})});
  CHECK(repeated.message == "bad_shape: args repeats the key \"b\"");

  auto timeout = ErrorOf(Array{0, 7, "ping", Map{}, 0});
  CHECK(timeout.message == "bad_shape: timeout_ms must be a positive integer, got 0");

  auto count = ErrorOf(Array{0, 7, "ping"});
  CHECK(count.message == "bad_shape: a request has 4 or 5 elements, got 3");

  auto status = ErrorOf(Array{1, 7, "maybe", nullptr});
  CHECK(status.message == "bad_shape: reply status must be \"ok\" or \"error\", got \"maybe\"");

  auto code = ErrorOf(Array{1, 7, "error", MakeMap({{"message", "m"}})});
  CHECK(code.message == "bad_shape: error needs \"code\" and \"message\"");

  auto type = ErrorOf(Array{9, 7});
  CHECK(type.kind == DecodeErrorKind::kUnknownMessageType);
  CHECK(type.message == "unknown_message_type: message type 9 is not one of 0..3");
  CHECK(type.call_id == std::optional<uint64_t>(7));

  auto id = ErrorOf(Array{0, uint64_t{1} << 63, "ping", Map{}});
  CHECK(id.message ==
        "bad_shape: call_id must be an integer in 0..2^63-1, got 9223372036854775808");
  CHECK_FALSE(id.call_id.has_value());

  auto not_array = ErrorOf(MakeMap({{"a", 1}}));
  CHECK(not_array.message == "bad_shape: a message is an array, got map");
  CHECK_FALSE(not_array.call_id.has_value());
}

TEST_CASE("a body that fails to decode still yields its call id when intact", "[message]") {
  auto check = [](std::string_view hex, std::optional<uint64_t> id, DecodeErrorKind kind) {
    auto decoded = DecodeMessage(HexToBytes(hex));
    REQUIRE(std::holds_alternative<DecodeError>(decoded));
    INFO(hex << ": " << std::get<DecodeError>(decoded).message);
    CHECK(std::get<DecodeError>(decoded).kind == kind);
    CHECK(std::get<DecodeError>(decoded).call_id == id);
  };
  check("940007a470696e", 7, DecodeErrorKind::kTruncated);
  check("9400cd0100a470696e", 256, DecodeErrorKind::kTruncated);
  check("9400d07fa4", 127, DecodeErrorKind::kTruncated);
  check("9400d0ffa4", std::nullopt, DecodeErrorKind::kTruncated);
  check("9400cd01", std::nullopt, DecodeErrorKind::kTruncated);
  check("9400", std::nullopt, DecodeErrorKind::kTruncated);
  check("9100", std::nullopt, DecodeErrorKind::kBadShape);
  check("91", std::nullopt, DecodeErrorKind::kTruncated);
  check("92c107", std::nullopt, DecodeErrorKind::kUnknownType);
  check(
      "dc0004"
      "00"
      "2a"
      "c1",
      42, DecodeErrorKind::kUnknownType);
  check(
      "dd00000004"
      "00"
      "2a"
      "c1",
      42, DecodeErrorKind::kUnknownType);
  check(
      "9400cf7fffffffffffffff"
      "c1",
      kMaxCallId, DecodeErrorKind::kUnknownType);
  check(
      "9400cf8000000000000000"
      "c1",
      std::nullopt, DecodeErrorKind::kUnknownType);
}

TEST_CASE("after a bad body the next frame decodes", "[message][recovery]") {
  std::string stream;
  stream += EncodeFrame(EncodeMessage(Request{1, "ping", {}, std::nullopt}));
  stream += EncodeFrame(HexToBytes("940207a4"));    // truncated
  stream += EncodeFrame(HexToBytes("c1"));          // unknown type
  stream += EncodeFrame("");                        // empty body
  stream += EncodeFrame(HexToBytes("ddffffffff"));  // over a limit
  stream += EncodeFrame(HexToBytes("920203c0"));    // trailing bytes
  stream += EncodeFrame(EncodeMessage(Cancel{3}));

  FrameReader reader;
  REQUIRE(reader.Feed(stream));
  std::vector<std::string> outcomes;
  while (auto body = reader.Next()) {
    auto decoded = DecodeMessage(*body);
    if (const auto* e = std::get_if<DecodeError>(&decoded)) {
      outcomes.emplace_back(DecodeErrorKindName(e->kind));
    } else {
      outcomes.push_back("message " + std::to_string(std::get<Message>(decoded).index()));
    }
  }
  CHECK(outcomes == std::vector<std::string>{"message 0", "truncated", "unknown_type", "truncated",
                                             "limit_exceeded", "trailing_bytes", "message 2"});
}

TEST_CASE("the error codes are the closed set of the spec, in order", "[message]") {
  CHECK(ErrorCodes() == std::vector<std::string>{"validation", "not_found", "already_exists",
                                                 "not_migrated", "unsupported", "timeout",
                                                 "connection", "database", "protocol", "internal"});
}

}  // namespace
}  // namespace trellis::protocol
