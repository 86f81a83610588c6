// Value accessors and the display form used by logs and `trellis-port decode`.
#include "trellis/protocol/value.h"

#include <charconv>
#include <cmath>
#include <limits>

namespace trellis::protocol {
namespace {

constexpr char kHexDigits[] = "0123456789abcdef";

void AppendQuoted(std::string_view text, std::string& out) {
  out.push_back('"');
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (u < 0x20 || u == 0x7f) {
          out += "\\u00";
          out.push_back(kHexDigits[u >> 4]);
          out.push_back(kHexDigits[u & 0xf]);
        } else {
          out.push_back(c);
        }
    }
  }
  out.push_back('"');
}

void AppendDouble(double d, std::string& out) {
  if (std::isnan(d)) {
    out += "NaN";
    return;
  }
  if (std::isinf(d)) {
    out += d > 0 ? "Infinity" : "-Infinity";
    return;
  }
  char buf[32];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), d);
  std::string_view text(buf, end - buf);
  out += text;
  // Keep floats recognisable next to integers: 1.0 prints as "1.0", not "1".
  if (text.find_first_of(".eEn") == std::string_view::npos) out += ".0";
}

void AppendDisplay(const Value& v, std::string& out) {
  struct Visitor {
    std::string& out;
    void operator()(std::monostate) { out += "null"; }
    void operator()(bool b) { out += b ? "true" : "false"; }
    void operator()(int64_t i) { out += std::to_string(i); }
    void operator()(uint64_t u) { out += std::to_string(u); }
    void operator()(double d) { AppendDouble(d, out); }
    void operator()(const std::string& s) { AppendQuoted(s, out); }
    void operator()(const Binary& b) {
      out += "b\"";
      for (const char c : b.bytes) {
        const auto u = static_cast<unsigned char>(c);
        out.push_back(kHexDigits[u >> 4]);
        out.push_back(kHexDigits[u & 0xf]);
      }
      out.push_back('"');
    }
    void operator()(const Array& a) {
      out.push_back('[');
      for (size_t i = 0; i < a.size(); ++i) {
        if (i > 0) out += ", ";
        AppendDisplay(a[i], out);
      }
      out.push_back(']');
    }
    void operator()(const Map& m) {
      out.push_back('{');
      for (size_t i = 0; i < m.size(); ++i) {
        if (i > 0) out += ", ";
        AppendDisplay(m[i].first, out);
        out += ": ";
        AppendDisplay(m[i].second, out);
      }
      out.push_back('}');
    }
  };
  std::visit(Visitor{out}, v.storage());
}

}  // namespace

void Value::SetUnsigned(uint64_t u) {
  if (u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    v_ = static_cast<int64_t>(u);
  } else {
    v_ = u;
  }
}

std::optional<int64_t> Value::as_int64() const {
  if (const auto* i = std::get_if<int64_t>(&v_)) return *i;
  return std::nullopt;  // a uint64 is always above INT64_MAX (see SetUnsigned)
}

std::optional<uint64_t> Value::as_uint64() const {
  if (const auto* u = std::get_if<uint64_t>(&v_)) return *u;
  if (const auto* i = std::get_if<int64_t>(&v_); i != nullptr && *i >= 0) {
    return static_cast<uint64_t>(*i);
  }
  return std::nullopt;
}

const Value* Value::Find(std::string_view key) const {
  const auto* map = std::get_if<Map>(&v_);
  if (map == nullptr) return nullptr;
  for (const auto& [k, v] : *map) {
    if (k.is_string() && k.as_string() == key) return &v;
  }
  return nullptr;
}

Map MakeMap(std::initializer_list<std::pair<std::string_view, Value>> entries) {
  Map map;
  map.reserve(entries.size());
  for (const auto& [key, value] : entries) map.emplace_back(Value(key), value);
  return map;
}

std::string ToDisplayString(const Value& v) {
  std::string out;
  AppendDisplay(v, out);
  return out;
}

}  // namespace trellis::protocol
