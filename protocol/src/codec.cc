// msgpack <-> Value. Decoding is two steps: the structural pre-scan (scan.h)
// proves the bytes are one complete value within the limits, then msgpack-c
// builds its object tree (with the same limits passed explicitly, as a second
// line of defence) and that tree is copied into a Value. Encoding goes
// through msgpack::packer (writer.h).
#include "trellis/protocol/codec.h"

#include <msgpack.hpp>

#include "scan.h"
#include "writer.h"

namespace trellis::protocol {
namespace {

// Raised while copying msgpack-c's tree if it holds something the pre-scan
// should have refused; caught below and reported like a scan failure.
struct UnexpectedObject {
  DecodeErrorKind kind;
  const char* what;
};

// str and bin objects point into the input instead of being copied into
// msgpack-c's zone: they are copied once, into the Value.
bool ReferenceEverything(msgpack::type::object_type, std::size_t, void*) { return true; }

msgpack::unpack_limit ToUnpackLimit(const DecodeLimits& limits) {
  return msgpack::unpack_limit(limits.max_array_items, limits.max_map_pairs, limits.max_str_bytes,
                               limits.max_bin_bytes, /*ext=*/0,
                               internal::EffectiveMaxDepth(limits));
}

Value FromObject(const msgpack::object& o) {
  switch (o.type) {
    case msgpack::type::NIL:
      return Value();
    case msgpack::type::BOOLEAN:
      return Value(o.via.boolean);
    case msgpack::type::POSITIVE_INTEGER:
      return Value(uint64_t{o.via.u64});
    case msgpack::type::NEGATIVE_INTEGER:
      return Value(int64_t{o.via.i64});
    case msgpack::type::FLOAT32:
    case msgpack::type::FLOAT64:
      return Value(o.via.f64);
    case msgpack::type::STR:
      return Value(std::string(o.via.str.ptr, o.via.str.size));
    case msgpack::type::BIN:
      return Value(Binary{std::string(o.via.bin.ptr, o.via.bin.size)});
    case msgpack::type::ARRAY: {
      Array array;
      array.reserve(o.via.array.size);
      for (uint32_t i = 0; i < o.via.array.size; ++i) {
        array.push_back(FromObject(o.via.array.ptr[i]));
      }
      return Value(std::move(array));
    }
    case msgpack::type::MAP: {
      Map map;
      map.reserve(o.via.map.size);
      for (uint32_t i = 0; i < o.via.map.size; ++i) {
        const msgpack::object_kv& kv = o.via.map.ptr[i];
        map.emplace_back(FromObject(kv.key), FromObject(kv.val));
      }
      return Value(std::move(map));
    }
    case msgpack::type::EXT:
      break;
  }
  throw UnexpectedObject{DecodeErrorKind::kUnknownType,
                         "msgpack ext types are not part of the protocol"};
}

DecodeError MakeError(DecodeErrorKind kind, size_t offset, std::string_view what) {
  std::string message(DecodeErrorKindName(kind));
  message += " at byte ";
  message += std::to_string(offset);
  message += ": ";
  message += what;
  return DecodeError{kind, std::move(message), std::nullopt};
}

// Maps msgpack-c's exceptions onto the spec's error classes. Only reached if
// msgpack-c and the pre-scan disagree; the fuzz target checks they never do.
DecodeError FromUnpackError(const msgpack::unpack_error& e) {
  DecodeErrorKind kind = DecodeErrorKind::kUnknownType;
  if (dynamic_cast<const msgpack::insufficient_bytes*>(&e) != nullptr) {
    kind = DecodeErrorKind::kTruncated;
  } else if (dynamic_cast<const msgpack::depth_size_overflow*>(&e) != nullptr) {
    kind = DecodeErrorKind::kTooDeep;
  } else if (dynamic_cast<const msgpack::ext_size_overflow*>(&e) != nullptr) {
    kind = DecodeErrorKind::kUnknownType;
  } else if (dynamic_cast<const msgpack::size_overflow*>(&e) != nullptr) {
    kind = DecodeErrorKind::kLimitExceeded;
  }
  return MakeError(kind, 0, std::string("msgpack-c: ") + e.what());
}

}  // namespace

std::string_view DecodeErrorKindName(DecodeErrorKind kind) {
  switch (kind) {
    case DecodeErrorKind::kTruncated:
      return "truncated";
    case DecodeErrorKind::kTrailingBytes:
      return "trailing_bytes";
    case DecodeErrorKind::kTooDeep:
      return "too_deep";
    case DecodeErrorKind::kLimitExceeded:
      return "limit_exceeded";
    case DecodeErrorKind::kUnknownType:
      return "unknown_type";
    case DecodeErrorKind::kBadShape:
      return "bad_shape";
    case DecodeErrorKind::kUnknownMessageType:
      return "unknown_message_type";
  }
  return "unknown";
}

std::variant<Value, DecodeError> DecodeValue(std::string_view bytes, const DecodeLimits& limits) {
  if (auto failure = internal::ScanBody(bytes, limits)) {
    return MakeError(failure->kind, failure->offset, failure->what);
  }
  try {
    std::size_t offset = 0;
    const msgpack::object_handle handle = msgpack::unpack(
        bytes.data(), bytes.size(), offset, &ReferenceEverything, nullptr, ToUnpackLimit(limits));
    if (offset != bytes.size()) {
      return MakeError(DecodeErrorKind::kTrailingBytes, offset, "msgpack-c stopped early");
    }
    return FromObject(handle.get());
  } catch (const msgpack::unpack_error& e) {
    return FromUnpackError(e);
  } catch (const UnexpectedObject& e) {
    return MakeError(e.kind, 0, e.what);
  }
}

std::string EncodeValue(const Value& value) {
  internal::Writer writer;
  writer.Write(value);
  return writer.Take();
}

}  // namespace trellis::protocol
