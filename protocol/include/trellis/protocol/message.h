// The four message types of spec/protocol.md section 3, as typed structs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "trellis/protocol/value.h"

namespace trellis::protocol {

inline constexpr int64_t kProtocolMajor = 1;
inline constexpr int64_t kProtocolMinor = 0;
inline constexpr uint32_t kDefaultTimeoutMs = 30'000;
// Call ids are below 2^63 (spec section 3), so both sides can hold them in a
// signed 64-bit integer.
inline constexpr uint64_t kMaxCallId = (uint64_t{1} << 63) - 1;

enum class MessageType : uint8_t { kRequest = 0, kReply = 1, kCancel = 2, kEvent = 3 };

// The structs below are plain data: not synchronised.
struct Request {
  uint64_t call_id = 0;
  std::string op;
  Map args;
  // Absent: kDefaultTimeoutMs. When present, at least 1 and possibly huge
  // (any uint64): clamp before adding it to a clock.
  std::optional<uint64_t> timeout_ms;
  friend bool operator==(const Request&, const Request&) = default;
};

// The error object of a failed call (spec section 3 and 6).
struct ErrorInfo {
  std::string code;  // one of the closed set in spec section 6
  std::string message;
  std::optional<std::string> sqlstate;
  std::optional<std::string> detail;
  std::optional<std::string> hint;
  friend bool operator==(const ErrorInfo&, const ErrorInfo&) = default;
};

struct Reply {
  uint64_t call_id = 0;
  // Exactly one of the two is meaningful: ok() tells which.
  std::variant<Value, ErrorInfo> result;
  bool ok() const { return std::holds_alternative<Value>(result); }
  friend bool operator==(const Reply&, const Reply&) = default;
};

struct Cancel {
  uint64_t call_id = 0;
  friend bool operator==(const Cancel&, const Cancel&) = default;
};

struct Event {
  std::string kind;
  Map payload;
  friend bool operator==(const Event&, const Event&) = default;
};

using Message = std::variant<Request, Reply, Cancel, Event>;

// The closed set of error codes (spec section 6), in spec order.
const std::vector<std::string>& ErrorCodes();

}  // namespace trellis::protocol
