// Value -> msgpack through msgpack::packer.
#include "writer.h"

#include <cassert>
#include <cstring>
#include <limits>

namespace trellis::protocol::internal {
namespace {

uint32_t Length(size_t size) {
  assert(size <= std::numeric_limits<uint32_t>::max());
  return static_cast<uint32_t>(size);
}

}  // namespace

void Writer::ArrayHeader(size_t size) { packer_.pack_array(Length(size)); }

void Writer::MapHeader(size_t size) { packer_.pack_map(Length(size)); }

void Writer::Int(int64_t i) { packer_.pack_int64(i); }

void Writer::Uint(uint64_t u) { packer_.pack_uint64(u); }

void Writer::Str(std::string_view s) {
  packer_.pack_str(Length(s.size()));
  packer_.pack_str_body(s.data(), Length(s.size()));
}

void Writer::Double(double d) {
  static_assert(sizeof(double) == sizeof(uint64_t));
  constexpr char kFloat64 = static_cast<char>(0xcb);
  uint64_t bits;
  std::memcpy(&bits, &d, sizeof bits);
  char buf[9] = {kFloat64};
  for (int i = 0; i < 8; ++i) buf[1 + i] = static_cast<char>(bits >> (56 - 8 * i));
  sink_.write(buf, sizeof buf);
}

void Writer::Write(const Value& value) {
  struct Visitor {
    Writer& w;
    void operator()(std::monostate) { w.packer_.pack_nil(); }
    void operator()(bool b) {
      if (b) {
        w.packer_.pack_true();
      } else {
        w.packer_.pack_false();
      }
    }
    void operator()(int64_t i) { w.Int(i); }
    void operator()(uint64_t u) { w.Uint(u); }
    void operator()(double d) { w.Double(d); }
    void operator()(const std::string& s) { w.Str(s); }
    void operator()(const Binary& b) {
      w.packer_.pack_bin(Length(b.bytes.size()));
      w.packer_.pack_bin_body(b.bytes.data(), Length(b.bytes.size()));
    }
    void operator()(const Array& a) {
      w.ArrayHeader(a.size());
      for (const auto& item : a) w.Write(item);
    }
    void operator()(const Map& m) {
      w.MapHeader(m.size());
      for (const auto& [key, item] : m) {
        w.Write(key);
        w.Write(item);
      }
    }
  };
  std::visit(Visitor{*this}, value.storage());
}

}  // namespace trellis::protocol::internal
