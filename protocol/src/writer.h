// Canonical msgpack output (spec/protocol.md section 2) through msgpack-c's
// packer, which already picks the smallest integer, str, bin, array and map
// forms. Floats are the exception: msgpack::packer::pack_double writes a
// whole-number double (2.0, even -0.0) as an integer, which would change the
// value's type on the other side, so Double() writes float 64 itself.
// Internal to the protocol library.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <msgpack.hpp>

#include "trellis/protocol/value.h"

namespace trellis::protocol::internal {

// Appends msgpack to an owned string. Not thread-safe.
class Writer {
 public:
  Writer() : packer_(sink_) {}
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  // REQUIRES: sizes below 2^32 (msgpack's widest length field); frames are
  // far smaller, so callers check the frame limit instead.
  void ArrayHeader(size_t size);
  void MapHeader(size_t size);
  void Int(int64_t i);
  void Uint(uint64_t u);
  void Str(std::string_view s);
  void Double(double d);
  void Write(const Value& value);

  std::string Take() { return std::move(sink_.out); }

 private:
  // The stream concept msgpack::packer writes to.
  struct StringSink {
    void write(const char* data, size_t size) { out.append(data, size); }
    std::string out;
  };

  StringSink sink_;
  msgpack::packer<StringSink> packer_;
};

}  // namespace trellis::protocol::internal
