// libFuzzer target over the whole protocol library: every input is tried as
// a msgpack value, as a message body, and as a byte stream of frames. It
// aborts when
//  - the pre-scan and msgpack-c's own parser disagree on whether the input
//    is one valid value (so neither is stricter than the other);
//  - a decoded value or message does not re-encode to bytes that decode to
//    the same thing and re-encode identically (canonical, stable);
//  - the frame reader's output depends on how the stream was chunked, or
//    loses or invents bytes.
// Built only with -DTRELLIS_FUZZ=ON under clang; see fuzz.sh.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include <msgpack.hpp>

#include "trellis/protocol/codec.h"
#include "trellis/protocol/frame.h"

namespace trellis::protocol {
namespace {

#define FUZZ_CHECK(cond)                                                            \
  do {                                                                              \
    if (!(cond)) {                                                                  \
      std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                 \
    }                                                                               \
  } while (0)

bool ReferenceEverything(msgpack::type::object_type, std::size_t, void*) { return true; }

bool HasExt(const msgpack::object& o) {
  switch (o.type) {
    case msgpack::type::EXT:
      return true;
    case msgpack::type::ARRAY:
      return std::any_of(o.via.array.ptr, o.via.array.ptr + o.via.array.size, HasExt);
    case msgpack::type::MAP:
      return std::any_of(
          o.via.map.ptr, o.via.map.ptr + o.via.map.size,
          [](const msgpack::object_kv& kv) { return HasExt(kv.key) || HasExt(kv.val); });
    default:
      return false;
  }
}

// Whether msgpack-c alone accepts `input` as exactly one value within the
// limits. Every size limit is capped at the input length, which no valid
// value can exceed, so msgpack-c never reserves more than the input allows.
bool MsgpackAccepts(std::string_view input, const DecodeLimits& limits) {
  const size_t n = input.size();
  const msgpack::unpack_limit limit(
      std::min(limits.max_array_items, n), std::min(limits.max_map_pairs, n),
      std::min(limits.max_str_bytes, n), std::min(limits.max_bin_bytes, n), n, limits.max_depth);
  try {
    std::size_t offset = 0;
    const auto handle =
        msgpack::unpack(input.data(), n, offset, &ReferenceEverything, nullptr, limit);
    return offset == n && !HasExt(handle.get());
  } catch (const msgpack::unpack_error&) {
    return false;
  }
}

void CheckValue(std::string_view input) {
  const DecodeLimits limits;
  const auto decoded = DecodeValue(input, limits);
  FUZZ_CHECK(std::holds_alternative<Value>(decoded) == MsgpackAccepts(input, limits));
  if (!std::holds_alternative<Value>(decoded)) return;
  const std::string bytes = EncodeValue(std::get<Value>(decoded));
  const auto again = DecodeValue(bytes, limits);
  FUZZ_CHECK(std::holds_alternative<Value>(again));
  FUZZ_CHECK(EncodeValue(std::get<Value>(again)) == bytes);
  FUZZ_CHECK(bytes.size() <= input.size() * 2 + 9);  // float 32 -> 64 is the largest growth
}

void CheckMessage(std::string_view input) {
  const auto decoded = DecodeMessage(input);
  if (const auto* error = std::get_if<DecodeError>(&decoded)) {
    FUZZ_CHECK(!error->message.empty());
    FUZZ_CHECK(!error->call_id || *error->call_id <= kMaxCallId);
    return;
  }
  const Message& message = std::get<Message>(decoded);
  const std::string bytes = EncodeMessage(message);
  FUZZ_CHECK(bytes == EncodeValue(MessageToValue(message)));
  const auto again = DecodeMessage(bytes);
  FUZZ_CHECK(std::holds_alternative<Message>(again));
  FUZZ_CHECK(EncodeMessage(std::get<Message>(again)) == bytes);
}

struct Frames {
  std::vector<std::string> bodies;
  bool lost = false;
  size_t rest = 0;
  bool operator==(const Frames&) const = default;
};

// A small maximum so oversized prefixes come up often.
constexpr size_t kFuzzMaxFrame = 64;

Frames ReadFrames(std::string_view stream, size_t chunk) {
  Frames out;
  FrameReader reader(kFuzzMaxFrame);
  for (size_t pos = 0; pos < stream.size(); pos += chunk) {
    reader.Feed(stream.substr(pos, chunk));
    while (auto body = reader.Next()) {
      FUZZ_CHECK(body->size() <= kFuzzMaxFrame);
      out.bodies.push_back(std::move(*body));
    }
  }
  out.lost = reader.framing_lost();
  out.rest = reader.buffered();
  return out;
}

void CheckFrames(std::string_view stream) {
  const Frames whole = ReadFrames(stream, std::max<size_t>(stream.size(), 1));
  const size_t chunk = stream.empty() ? 1 : static_cast<unsigned char>(stream[0]) % 7 + 1;
  FUZZ_CHECK(ReadFrames(stream, chunk) == whole);
  FUZZ_CHECK(ReadFrames(stream, 1) == whole);
  size_t used = whole.rest;
  for (const auto& body : whole.bodies) {
    used += kFrameHeaderBytes + body.size();
    CheckMessage(body);
  }
  if (whole.lost) {
    FUZZ_CHECK(used + kFrameHeaderBytes <= stream.size());
  } else {
    FUZZ_CHECK(used == stream.size());
  }
}

}  // namespace
}  // namespace trellis::protocol

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  trellis::protocol::CheckValue(input);
  trellis::protocol::CheckMessage(input);
  trellis::protocol::CheckFrames(input);
  return 0;
}
