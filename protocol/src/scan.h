// Structural check of msgpack bytes (spec/protocol.md section 2), run before
// msgpack-c builds anything. It walks type bytes and declared lengths, never
// allocates on success, and classifies every error exactly: msgpack-c alone
// would reserve memory from a declared array length before looking for the
// elements, so a 5-byte body could ask for gigabytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "trellis/protocol/codec.h"

namespace trellis::protocol::internal {

// Nesting is checked recursively, so a caller-supplied max_depth is clamped
// to this to keep the stack small whatever the limits say.
inline constexpr size_t kMaxSupportedDepth = 512;

struct ScanFailure {
  DecodeErrorKind kind;
  size_t offset;     // where the offending value starts
  std::string what;  // what is wrong, for DecodeError::message
};

// Checks that `bytes` holds exactly one value within `limits`. The first error
// met reading left to right wins; at each value the order is: type byte
// (unknown_type), length field (truncated), declared length against its limit
// (limit_exceeded), nesting depth (too_deep), then the content (truncated).
// After the value: trailing_bytes. Empty input is truncated.
std::optional<ScanFailure> ScanBody(std::string_view bytes, const DecodeLimits& limits);

// The call id of a message-like body, read from as much of it as is intact:
// the body starts with an array header declaring at least 2 elements, the
// first element is complete and within limits, and the second is a complete
// integer in 0..kMaxCallId. Used to address an error reply for a body that
// failed to decode.
std::optional<uint64_t> PeekCallId(std::string_view bytes, const DecodeLimits& limits);

// The effective depth limit (limits.max_depth clamped to kMaxSupportedDepth).
size_t EffectiveMaxDepth(const DecodeLimits& limits);

}  // namespace trellis::protocol::internal
