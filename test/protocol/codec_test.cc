// DecodeValue / EncodeValue: error classes and messages, limits, and
// round-trip properties. Exact byte-level cases live in spec/conformance.
#include <string>

#include <catch2/catch.hpp>

#include "random_values.h"
#include "trellis/protocol/codec.h"
#include "vectors.h"

namespace trellis::protocol {
namespace {

using testing::HexToBytes;

DecodeError ErrorOf(std::string_view hex, const DecodeLimits& limits = {}) {
  auto decoded = DecodeValue(HexToBytes(hex), limits);
  REQUIRE(std::holds_alternative<DecodeError>(decoded));
  return std::get<DecodeError>(decoded);
}

Value ValueOf(std::string_view bytes, const DecodeLimits& limits = {}) {
  auto decoded = DecodeValue(bytes, limits);
  if (const auto* e = std::get_if<DecodeError>(&decoded)) FAIL(e->message);
  return std::get<Value>(std::move(decoded));
}

TEST_CASE("error kinds have the names the spec uses", "[codec]") {
  CHECK(DecodeErrorKindName(DecodeErrorKind::kTruncated) == "truncated");
  CHECK(DecodeErrorKindName(DecodeErrorKind::kTrailingBytes) == "trailing_bytes");
  CHECK(DecodeErrorKindName(DecodeErrorKind::kTooDeep) == "too_deep");
  CHECK(DecodeErrorKindName(DecodeErrorKind::kLimitExceeded) == "limit_exceeded");
  CHECK(DecodeErrorKindName(DecodeErrorKind::kUnknownType) == "unknown_type");
  CHECK(DecodeErrorKindName(DecodeErrorKind::kBadShape) == "bad_shape");
  CHECK(DecodeErrorKindName(DecodeErrorKind::kUnknownMessageType) == "unknown_message_type");
}

TEST_CASE("error messages name the class, the offset and the cause", "[codec]") {
  const auto huge = ErrorOf("ddffffffff");
  CHECK(huge.kind == DecodeErrorKind::kLimitExceeded);
  CHECK(huge.message ==
        "limit_exceeded at byte 0: array 32 declares 4294967295 elements, over the limit of "
        "1048576");
  CHECK_FALSE(huge.call_id.has_value());

  const auto cut = ErrorOf("9201");
  CHECK(cut.kind == DecodeErrorKind::kTruncated);
  CHECK(cut.message == "truncated at byte 2: a value was expected, no bytes left");

  const auto str = ErrorOf("91d905616263");
  CHECK(str.message == "truncated at byte 1: str 8 declares 5 bytes, 3 left");

  const auto trailing = ErrorOf("9101c0c0");
  CHECK(trailing.kind == DecodeErrorKind::kTrailingBytes);
  CHECK(trailing.message == "trailing_bytes at byte 2: 2 bytes follow the value");

  const auto c1 = ErrorOf("9301c1");
  CHECK(c1.kind == DecodeErrorKind::kUnknownType);
  CHECK(c1.message == "unknown_type at byte 2: byte 0xc1 is never used in msgpack");

  const auto ext = ErrorOf("d6ff00000000");
  CHECK(ext.message == "unknown_type at byte 0: msgpack ext types are not part of the protocol");

  std::string nested;
  for (int i = 0; i < 64; ++i) nested += "91";
  const auto deep = ErrorOf(nested + "90");
  CHECK(deep.kind == DecodeErrorKind::kTooDeep);
  CHECK(deep.message ==
        "too_deep at byte 64: fixarray opens nesting level 65, over the limit of 64");
}

TEST_CASE("dd ff ff ff ff is refused at once", "[codec][limits]") {
  // Refused from the header alone: alloc_test.cc shows no allocation over
  // 1 KiB happens on the way (no timing is asserted here).
  auto decoded = DecodeValue(HexToBytes("ddffffffff"));
  REQUIRE(std::get<DecodeError>(decoded).kind == DecodeErrorKind::kLimitExceeded);
}

TEST_CASE("a body wider than the total-values limit is refused", "[codec][limits]") {
  // Two arrays of a million nils each: every array within its own limit,
  // the body over the total (2 097 152 values, the outer array included).
  std::string body = HexToBytes("92");
  for (int i = 0; i < 2; ++i) {
    body += HexToBytes("dd00100000");
    body.append(1024 * 1024, '\xc0');
  }
  auto decoded = DecodeValue(body);
  REQUIRE(std::holds_alternative<DecodeError>(decoded));
  CHECK(std::get<DecodeError>(decoded).kind == DecodeErrorKind::kLimitExceeded);
  CHECK_THAT(std::get<DecodeError>(decoded).message, Catch::Contains("values"));

  DecodeLimits wider;
  wider.max_total_values = 3 * 1024 * 1024;
  CHECK(std::holds_alternative<Value>(DecodeValue(body, wider)));
}

TEST_CASE("containers at exactly the limits decode", "[codec][limits]") {
  std::string array = HexToBytes("dd00100000");
  array.append(1024 * 1024, '\xc0');
  const Value big = ValueOf(array);
  REQUIRE(big.is_array());
  CHECK(big.as_array().size() == 1024 * 1024);
  CHECK(big.as_array().back().is_nil());

  std::string str = HexToBytes("db00800000");
  str.append(8 * 1024 * 1024, 's');
  const Value text = ValueOf(str);
  REQUIRE(text.is_string());
  CHECK(text.as_string().size() == 8u * 1024 * 1024);
}

TEST_CASE("limits can be lowered per call", "[codec][limits]") {
  DecodeLimits limits;
  limits.max_depth = 2;
  limits.max_str_bytes = 3;
  limits.max_bin_bytes = 2;
  limits.max_array_items = 2;
  limits.max_map_pairs = 1;
  CHECK(ValueOf(HexToBytes("9190"), limits) == Value(Array{Value(Array{})}));
  CHECK(ErrorOf("919190", limits).kind == DecodeErrorKind::kTooDeep);
  CHECK(ValueOf(HexToBytes("a3616263"), limits) == Value("abc"));
  CHECK(ErrorOf("a461626364", limits).kind == DecodeErrorKind::kLimitExceeded);
  CHECK(ErrorOf("c403010203", limits).kind == DecodeErrorKind::kLimitExceeded);
  CHECK(ErrorOf("93010203", limits).kind == DecodeErrorKind::kLimitExceeded);
  CHECK(ErrorOf("82a16101a16202", limits).kind == DecodeErrorKind::kLimitExceeded);
}

TEST_CASE("a huge depth limit is clamped instead of overflowing the stack", "[codec][limits]") {
  DecodeLimits limits;
  limits.max_depth = 1'000'000;
  std::string ok(511, '\x91');
  ok.push_back('\x90');
  CHECK(ValueOf(ok, limits).is_array());
  std::string deep(100'000, '\x91');
  deep.push_back('\x90');
  auto decoded = DecodeValue(deep, limits);
  REQUIRE(std::holds_alternative<DecodeError>(decoded));
  CHECK(std::get<DecodeError>(decoded).kind == DecodeErrorKind::kTooDeep);
  CHECK(std::get<DecodeError>(decoded).message.find("over the limit of 512") != std::string::npos);
}

TEST_CASE("decoded integers are int64 when they fit, else uint64", "[codec]") {
  CHECK(std::holds_alternative<int64_t>(ValueOf(HexToBytes("cf0000000000000001")).storage()));
  CHECK(std::holds_alternative<int64_t>(ValueOf(HexToBytes("cf7fffffffffffffff")).storage()));
  CHECK(std::holds_alternative<uint64_t>(ValueOf(HexToBytes("cf8000000000000000")).storage()));
  CHECK(std::holds_alternative<int64_t>(ValueOf(HexToBytes("d38000000000000000")).storage()));
}

TEST_CASE("strings and bins stay distinct", "[codec]") {
  CHECK(ValueOf(HexToBytes("a26869")) == Value("hi"));
  CHECK(ValueOf(HexToBytes("c4026869")) == Value(Binary{"hi"}));
  CHECK(EncodeValue(Value(Binary{"hi"})) == HexToBytes("c4026869"));
  CHECK(EncodeValue(Value("hi")) == HexToBytes("a26869"));
}

TEST_CASE("random values survive encode then decode", "[codec][property]") {
  testing::RandomValues random(20240611);
  for (int i = 0; i < 3000; ++i) {
    const Value value = random.Any();
    const std::string bytes = EncodeValue(value);
    auto decoded = DecodeValue(bytes);
    INFO("value " << ToDisplayString(value));
    REQUIRE(std::holds_alternative<Value>(decoded));
    REQUIRE(testing::SameValue(std::get<Value>(decoded), value));
    // Canonical: the encoding of what was decoded is the same bytes.
    REQUIRE(EncodeValue(std::get<Value>(decoded)) == bytes);
  }
}

TEST_CASE("every proper prefix of a valid encoding is truncated", "[codec][property]") {
  testing::RandomValues random(7);
  for (int i = 0; i < 300; ++i) {
    const std::string bytes = EncodeValue(random.Any(3));
    for (size_t n = 0; n < bytes.size(); ++n) {
      auto decoded = DecodeValue(std::string_view(bytes).substr(0, n));
      REQUIRE(std::holds_alternative<DecodeError>(decoded));
      REQUIRE(std::get<DecodeError>(decoded).kind == DecodeErrorKind::kTruncated);
    }
  }
}

}  // namespace
}  // namespace trellis::protocol
