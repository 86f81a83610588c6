// msgpack <-> Value and Value <-> Message (spec/protocol.md sections 2, 3).
// The only user of msgpack-c in the project. Every decode checks the declared
// sizes against explicit limits before anything is allocated, so a small
// frame can never make the decoder allocate much. All functions are pure and
// safe to call from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "trellis/protocol/message.h"
#include "trellis/protocol/value.h"

namespace trellis::protocol {

// The limits of spec section 2; each value itself is allowed. max_depth
// counts containers (a top-level array is level 1) and is clamped to 512.
struct DecodeLimits {
  size_t max_depth = 64;
  size_t max_str_bytes = 8u * 1024u * 1024u;
  size_t max_bin_bytes = 8u * 1024u * 1024u;
  size_t max_array_items = 1024u * 1024u;
  size_t max_map_pairs = 64u * 1024u;
  // Values in one body, all levels together: bounds the memory a small but
  // wide body (nested arrays of nils) can make the decoder build.
  size_t max_total_values = 2u * 1024u * 1024u;
};

// The error classes of spec sections 2 and 5; conformance vectors name them.
enum class DecodeErrorKind {
  kTruncated,           // "truncated"
  kTrailingBytes,       // "trailing_bytes"
  kTooDeep,             // "too_deep"
  kLimitExceeded,       // "limit_exceeded"
  kUnknownType,         // "unknown_type"        (ext, 0xc1)
  kBadShape,            // "bad_shape"           (a message of the wrong shape)
  kUnknownMessageType,  // "unknown_message_type"
};

struct DecodeError {
  DecodeErrorKind kind;
  // For people, not for matching: "<class> at byte <offset>: <cause>" for a
  // body that is not one valid value, "<class>: <cause>" for a bad shape.
  std::string message;
  // Set when the body was a message-like array whose call id could be read,
  // so the port can answer with an error reply instead of an event.
  std::optional<uint64_t> call_id;
};

std::string_view DecodeErrorKindName(DecodeErrorKind kind);

// Decodes exactly one value filling all of `bytes`. On failure the error has
// the class of the first fault in byte order (spec section 2) and no call id.
std::variant<Value, DecodeError> DecodeValue(std::string_view bytes,
                                             const DecodeLimits& limits = {});
// Canonical encoding (spec section 2): smallest integer and length forms,
// float 64 for every double. REQUIRES: every str, bin, array and map below
// 2^32 bytes/elements; callers keep frames under kMaxFrameBytes anyway.
std::string EncodeValue(const Value& value);

// Decodes a body as one message. Errors carry call_id as spec section 3 ("Call
// id of a failed message") says, so the port can answer with an error reply.
std::variant<Message, DecodeError> DecodeMessage(std::string_view body,
                                                 const DecodeLimits& limits = {});
// The message as the array that travels, e.g. [0, call_id, op, args].
Value MessageToValue(const Message& message);
// Same bytes as EncodeValue(MessageToValue(message)), without the copy.
std::string EncodeMessage(const Message& message);

}  // namespace trellis::protocol
