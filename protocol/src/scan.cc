// The structural pre-scan described in scan.h.
#include "scan.h"

#include <algorithm>

#include "trellis/protocol/message.h"

namespace trellis::protocol::internal {
namespace {

enum class Family { kStr, kBin, kArray, kMap };

// Walks one input left to right. Only the failure path allocates (the message).
class Scanner {
 public:
  Scanner(std::string_view bytes, const DecodeLimits& limits)
      : bytes_(bytes), limits_(limits), max_depth_(EffectiveMaxDepth(limits)) {}

  // Checks one value starting at pos() and moves past it. `depth` is the
  // number of containers around it (0 at the top).
  std::optional<ScanFailure> Value(size_t depth);

  // Reads an array header at pos(); nullopt when there is none or it is cut.
  std::optional<uint64_t> ArrayHeader();
  // Reads a complete non-negative integer at pos(); nullopt otherwise.
  std::optional<uint64_t> NonNegativeInt();

  size_t pos() const { return pos_; }
  size_t left() const { return bytes_.size() - pos_; }

 private:
  uint8_t ByteAt(size_t i) const { return static_cast<uint8_t>(bytes_[i]); }
  // REQUIRES: left() >= n.
  uint64_t ReadBigEndian(size_t n) {
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v = (v << 8) | ByteAt(pos_ + i);
    pos_ += n;
    return v;
  }

  std::optional<ScanFailure> Fixed(size_t start, const char* name, size_t payload);
  std::optional<ScanFailure> Sized(size_t start, const char* name, Family family,
                                   size_t length_bytes, uint64_t inline_length, size_t depth);

  std::string_view bytes_;
  const DecodeLimits& limits_;
  size_t max_depth_;
  size_t pos_ = 0;
  size_t values_ = 0;
};

ScanFailure Failure(DecodeErrorKind kind, size_t offset, std::string what) {
  return ScanFailure{kind, offset, std::move(what)};
}

std::string Count(uint64_t n, const char* unit) { return std::to_string(n) + " " + unit; }

std::optional<ScanFailure> Scanner::Fixed(size_t start, const char* name, size_t payload) {
  ++pos_;
  if (left() < payload) {
    return Failure(DecodeErrorKind::kTruncated, start,
                   std::string(name) + " needs " + Count(payload, "bytes") +
                       " after its type byte, " + std::to_string(left()) + " left");
  }
  pos_ += payload;
  return std::nullopt;
}

std::optional<ScanFailure> Scanner::Sized(size_t start, const char* name, Family family,
                                          size_t length_bytes, uint64_t inline_length,
                                          size_t depth) {
  ++pos_;
  if (left() < length_bytes) {
    return Failure(DecodeErrorKind::kTruncated, start,
                   std::string(name) + " needs a " + Count(length_bytes, "byte") + " length, " +
                       std::to_string(left()) + " left");
  }
  const uint64_t length = length_bytes == 0 ? inline_length : ReadBigEndian(length_bytes);

  size_t limit = 0;
  const char* unit = "";
  switch (family) {
    case Family::kStr:
      limit = limits_.max_str_bytes;
      unit = "bytes";
      break;
    case Family::kBin:
      limit = limits_.max_bin_bytes;
      unit = "bytes";
      break;
    case Family::kArray:
      limit = limits_.max_array_items;
      unit = "elements";
      break;
    case Family::kMap:
      limit = limits_.max_map_pairs;
      unit = "pairs";
      break;
  }
  if (length > limit) {
    return Failure(DecodeErrorKind::kLimitExceeded, start,
                   std::string(name) + " declares " + Count(length, unit) + ", over the limit of " +
                       std::to_string(limit));
  }

  if (family == Family::kStr || family == Family::kBin) {
    if (left() < length) {
      return Failure(DecodeErrorKind::kTruncated, start,
                     std::string(name) + " declares " + Count(length, unit) + ", " +
                         std::to_string(left()) + " left");
    }
    pos_ += length;
    return std::nullopt;
  }

  if (depth + 1 > max_depth_) {
    return Failure(DecodeErrorKind::kTooDeep, start,
                   std::string(name) + " opens nesting level " + std::to_string(depth + 1) +
                       ", over the limit of " + std::to_string(max_depth_));
  }
  const uint64_t items = family == Family::kMap ? length * 2 : length;
  for (uint64_t i = 0; i < items; ++i) {
    if (auto failure = Value(depth + 1)) return failure;
  }
  return std::nullopt;
}

std::optional<ScanFailure> Scanner::Value(size_t depth) {
  const size_t start = pos_;
  if (left() == 0) {
    return Failure(DecodeErrorKind::kTruncated, start, "a value was expected, no bytes left");
  }
  if (++values_ > limits_.max_total_values) {
    return Failure(
        DecodeErrorKind::kLimitExceeded, start,
        "the body holds more than " + std::to_string(limits_.max_total_values) + " values");
  }
  const uint8_t b = ByteAt(pos_);
  if (b <= 0x7f || b >= 0xe0) return Fixed(start, "fixint", 0);
  if (b <= 0x8f) return Sized(start, "fixmap", Family::kMap, 0, b & 0x0f, depth);
  if (b <= 0x9f) return Sized(start, "fixarray", Family::kArray, 0, b & 0x0f, depth);
  if (b <= 0xbf) return Sized(start, "fixstr", Family::kStr, 0, b & 0x1f, depth);
  switch (b) {
    case 0xc0:
      return Fixed(start, "nil", 0);
    case 0xc1:
      return Failure(DecodeErrorKind::kUnknownType, start, "byte 0xc1 is never used in msgpack");
    case 0xc2:
    case 0xc3:
      return Fixed(start, "bool", 0);
    case 0xc4:
      return Sized(start, "bin 8", Family::kBin, 1, 0, depth);
    case 0xc5:
      return Sized(start, "bin 16", Family::kBin, 2, 0, depth);
    case 0xc6:
      return Sized(start, "bin 32", Family::kBin, 4, 0, depth);
    case 0xc7:
    case 0xc8:
    case 0xc9:
    case 0xd4:
    case 0xd5:
    case 0xd6:
    case 0xd7:
    case 0xd8:
      return Failure(DecodeErrorKind::kUnknownType, start,
                     "msgpack ext types are not part of the protocol");
    case 0xca:
      return Fixed(start, "float 32", 4);
    case 0xcb:
      return Fixed(start, "float 64", 8);
    case 0xcc:
      return Fixed(start, "uint 8", 1);
    case 0xcd:
      return Fixed(start, "uint 16", 2);
    case 0xce:
      return Fixed(start, "uint 32", 4);
    case 0xcf:
      return Fixed(start, "uint 64", 8);
    case 0xd0:
      return Fixed(start, "int 8", 1);
    case 0xd1:
      return Fixed(start, "int 16", 2);
    case 0xd2:
      return Fixed(start, "int 32", 4);
    case 0xd3:
      return Fixed(start, "int 64", 8);
    case 0xd9:
      return Sized(start, "str 8", Family::kStr, 1, 0, depth);
    case 0xda:
      return Sized(start, "str 16", Family::kStr, 2, 0, depth);
    case 0xdb:
      return Sized(start, "str 32", Family::kStr, 4, 0, depth);
    case 0xdc:
      return Sized(start, "array 16", Family::kArray, 2, 0, depth);
    case 0xdd:
      return Sized(start, "array 32", Family::kArray, 4, 0, depth);
    case 0xde:
      return Sized(start, "map 16", Family::kMap, 2, 0, depth);
    default:  // 0xdf
      return Sized(start, "map 32", Family::kMap, 4, 0, depth);
  }
}

std::optional<uint64_t> Scanner::ArrayHeader() {
  if (left() == 0) return std::nullopt;
  const uint8_t b = ByteAt(pos_);
  if (b >= 0x90 && b <= 0x9f) {
    ++pos_;
    return b & 0x0f;
  }
  const size_t length_bytes = b == 0xdc ? 2 : b == 0xdd ? 4 : 0;
  if (length_bytes == 0 || left() < 1 + length_bytes) return std::nullopt;
  ++pos_;
  return ReadBigEndian(length_bytes);
}

std::optional<uint64_t> Scanner::NonNegativeInt() {
  if (left() == 0) return std::nullopt;
  const uint8_t b = ByteAt(pos_);
  if (b <= 0x7f) {
    ++pos_;
    return b;
  }
  size_t width = 0;
  switch (b) {
    case 0xcc:
    case 0xd0:
      width = 1;
      break;
    case 0xcd:
    case 0xd1:
      width = 2;
      break;
    case 0xce:
    case 0xd2:
      width = 4;
      break;
    case 0xcf:
    case 0xd3:
      width = 8;
      break;
    default:
      return std::nullopt;
  }
  const bool is_signed = b >= 0xd0;
  if (left() < 1 + width) return std::nullopt;
  ++pos_;
  const uint64_t raw = ReadBigEndian(width);
  // A signed form is non-negative when its top bit is clear.
  if (is_signed && (raw >> (width * 8 - 1)) != 0) return std::nullopt;
  return raw;
}

}  // namespace

size_t EffectiveMaxDepth(const DecodeLimits& limits) {
  return std::min(limits.max_depth, kMaxSupportedDepth);
}

std::optional<ScanFailure> ScanBody(std::string_view bytes, const DecodeLimits& limits) {
  Scanner scanner(bytes, limits);
  if (auto failure = scanner.Value(0)) return failure;
  if (scanner.left() != 0) {
    return Failure(DecodeErrorKind::kTrailingBytes, scanner.pos(),
                   Count(scanner.left(), "bytes") + " follow the value");
  }
  return std::nullopt;
}

std::optional<uint64_t> PeekCallId(std::string_view bytes, const DecodeLimits& limits) {
  Scanner scanner(bytes, limits);
  const auto elements = scanner.ArrayHeader();
  if (!elements || *elements < 2 || *elements > limits.max_array_items ||
      EffectiveMaxDepth(limits) < 1) {
    return std::nullopt;
  }
  if (scanner.Value(1)) return std::nullopt;
  const auto call_id = scanner.NonNegativeInt();
  if (!call_id || *call_id > kMaxCallId) return std::nullopt;
  return call_id;
}

}  // namespace trellis::protocol::internal
