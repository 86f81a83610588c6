// msgpack <-> Value and Value <-> Message. The only user of msgpack-c in the
// project. Every decode passes explicit limits (spec section 2) so a small
// frame can never make the decoder allocate much.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "trellis/protocol/message.h"
#include "trellis/protocol/value.h"

namespace trellis::protocol {

struct DecodeLimits {
  size_t max_depth = 64;
  size_t max_str_bytes = 8u * 1024u * 1024u;
  size_t max_bin_bytes = 8u * 1024u * 1024u;
  size_t max_array_items = 1024u * 1024u;
  size_t max_map_pairs = 64u * 1024u;
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
  std::string message;
  // Set when the body was a message-like array whose call id could be read,
  // so the port can answer with an error reply instead of an event.
  std::optional<uint64_t> call_id;
};

std::string_view DecodeErrorKindName(DecodeErrorKind kind);

// Decodes exactly one value filling all of `bytes`.
std::variant<Value, DecodeError> DecodeValue(std::string_view bytes,
                                             const DecodeLimits& limits = {});
// Canonical encoding: smallest integer forms, float64 for floats.
std::string EncodeValue(const Value& value);

std::variant<Message, DecodeError> DecodeMessage(std::string_view body,
                                                 const DecodeLimits& limits = {});
Value MessageToValue(const Message& message);
std::string EncodeMessage(const Message& message);

}  // namespace trellis::protocol
