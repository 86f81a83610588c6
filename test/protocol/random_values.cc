// Generators for round-trip properties.
#include "random_values.h"

#include <cstring>

#include "trellis/protocol/message.h"

namespace trellis::testing {

using protocol::Value;

Value RandomValues::Int() {
  // Boundaries of every msgpack integer width, and values next to them.
  static constexpr int64_t kSigned[] = {0,
                                        1,
                                        31,
                                        32,
                                        127,
                                        128,
                                        255,
                                        256,
                                        32767,
                                        32768,
                                        65535,
                                        65536,
                                        2147483647,
                                        2147483648LL,
                                        4294967295LL,
                                        -1,
                                        -31,
                                        -32,
                                        -33,
                                        -127,
                                        -128,
                                        -129,
                                        -32767,
                                        -32768,
                                        -32769,
                                        -2147483647LL - 1,
                                        -2147483647LL - 2,
                                        INT64_MIN,
                                        INT64_MAX};
  switch (Below(4)) {
    case 0:
      return Value(static_cast<int64_t>(kSigned[Below(std::size(kSigned))] + Below(3) - 1));
    case 1:
      return Value(uint64_t{rng_()});  // often above INT64_MAX
    case 2:
      return Value(static_cast<int64_t>(rng_()) >> Below(64));
    default:
      return Value(static_cast<int64_t>(Below(300)) - 150);
  }
}

std::string RandomValues::Text(size_t max_len) {
  std::string s(Below(max_len + 1), '\0');
  for (auto& c : s) c = static_cast<char>(Below(256));
  return s;
}

protocol::Map RandomValues::StringKeyedMap(int max_depth) {
  protocol::Map map;
  const size_t n = Below(6);
  for (size_t i = 0; i < n; ++i) {
    // Distinct keys: messages refuse repeated ones.
    map.emplace_back(Value("k" + std::to_string(i) + Text(4)), Any(max_depth));
  }
  return map;
}

Value RandomValues::Any(int max_depth) {
  const uint64_t pick = Below(max_depth > 0 ? 10 : 7);
  switch (pick) {
    case 0:
      return Value();
    case 1:
      return Value(Below(2) == 1);
    case 2:
      return Int();
    case 3: {
      const uint64_t bits = rng_();
      double d;
      std::memcpy(&d, &bits, sizeof d);
      return Value(Below(2) == 0 ? d : static_cast<double>(Int().as_int64().value_or(7)) / 4);
    }
    case 4:
      return Value(Text(Below(4) == 0 ? 300 : 40));
    case 5:
      return Value(protocol::Binary{Text(Below(4) == 0 ? 300 : 40)});
    case 6:
      return Int();
    case 7:
    case 8: {
      protocol::Array array;
      const size_t n = Below(Below(8) == 0 ? 40 : 6);
      for (size_t i = 0; i < n; ++i) array.push_back(Any(max_depth - 1));
      return Value(std::move(array));
    }
    default: {
      protocol::Map map;
      const size_t n = Below(Below(8) == 0 ? 20 : 5);
      for (size_t i = 0; i < n; ++i) map.emplace_back(Any(0), Any(max_depth - 1));
      return Value(std::move(map));
    }
  }
}

protocol::Message RandomValues::AnyMessage() {
  const uint64_t call_id = Below(2) == 0 ? Below(1000) : Below(protocol::kMaxCallId) + 1;
  switch (Below(4)) {
    case 0: {
      protocol::Request r{call_id, Text(12), StringKeyedMap(3), std::nullopt};
      if (Below(2) == 0) r.timeout_ms = 1 + Below(UINT64_MAX - 1);
      return r;
    }
    case 1: {
      if (Below(2) == 0) return protocol::Reply{call_id, Any(4)};
      protocol::ErrorInfo e{Text(10), Text(60), std::nullopt, std::nullopt, std::nullopt};
      if (Below(2) == 0) e.sqlstate = Text(5);
      if (Below(2) == 0) e.detail = Text(30);
      if (Below(2) == 0) e.hint = Text(30);
      return protocol::Reply{call_id, e};
    }
    case 2:
      return protocol::Cancel{call_id};
    default:
      return protocol::Event{Text(10), StringKeyedMap(3)};
  }
}

}  // namespace trellis::testing
