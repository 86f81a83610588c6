// The values that travel in protocol frames: a small, owning tree that mirrors
// the msgpack families spec/protocol.md allows. Plain data, no I/O.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace trellis::protocol {

class Value;

// Opaque bytes (msgpack bin). Kept apart from text (msgpack str).
struct Binary {
  std::string bytes;
  friend bool operator==(const Binary&, const Binary&) = default;
};

using Array = std::vector<Value>;
// A map keeps its pairs in wire order; keys are strings in every message the
// spec defines, but any value may be a key on the wire.
using Map = std::vector<std::pair<Value, Value>>;

// One msgpack value. Integers that fit in int64 are held as int64; only
// values above INT64_MAX use uint64, so equal numbers compare equal whatever
// width they travelled in. Floats compare as doubles (so NaN != NaN).
// A plain value type: not synchronised, copy it to share across threads.
class Value {
 public:
  using Storage = std::variant<std::monostate, bool, int64_t, uint64_t, double, std::string, Binary,
                               Array, Map>;

  Value() = default;
  Value(std::nullptr_t) {}
  Value(bool b) : v_(b) {}
  Value(int i) : v_(int64_t{i}) {}
  Value(unsigned int u) : v_(int64_t{u}) {}
  Value(int64_t i) : v_(i) {}
  Value(uint64_t u) { SetUnsigned(u); }
  Value(double d) : v_(d) {}
  Value(const char* s) : v_(std::string(s)) {}
  Value(std::string s) : v_(std::move(s)) {}
  Value(std::string_view s) : v_(std::string(s)) {}
  Value(Binary b) : v_(std::move(b)) {}
  Value(Array a) : v_(std::move(a)) {}
  Value(Map m) : v_(std::move(m)) {}

  bool is_nil() const { return std::holds_alternative<std::monostate>(v_); }
  bool is_bool() const { return std::holds_alternative<bool>(v_); }
  bool is_int() const {
    return std::holds_alternative<int64_t>(v_) || std::holds_alternative<uint64_t>(v_);
  }
  bool is_float() const { return std::holds_alternative<double>(v_); }
  bool is_string() const { return std::holds_alternative<std::string>(v_); }
  bool is_binary() const { return std::holds_alternative<Binary>(v_); }
  bool is_array() const { return std::holds_alternative<Array>(v_); }
  bool is_map() const { return std::holds_alternative<Map>(v_); }

  // REQUIRES: the matching is_*() is true.
  bool as_bool() const { return std::get<bool>(v_); }
  const std::string& as_string() const { return std::get<std::string>(v_); }
  const Binary& as_binary() const { return std::get<Binary>(v_); }
  const Array& as_array() const { return std::get<Array>(v_); }
  const Map& as_map() const { return std::get<Map>(v_); }
  std::string& as_string() { return std::get<std::string>(v_); }
  Array& as_array() { return std::get<Array>(v_); }
  Map& as_map() { return std::get<Map>(v_); }
  double as_double() const { return std::get<double>(v_); }

  // The integer as int64 / uint64 when it fits, else nullopt.
  std::optional<int64_t> as_int64() const;
  std::optional<uint64_t> as_uint64() const;

  // Map lookup by string key; nullptr when this is not a map or has no such key.
  const Value* Find(std::string_view key) const;

  const Storage& storage() const { return v_; }
  friend bool operator==(const Value&, const Value&) = default;

 private:
  void SetUnsigned(uint64_t u);
  Storage v_;
};

// Builds a map from string keys, in the order given.
Map MakeMap(std::initializer_list<std::pair<std::string_view, Value>> entries);

// A readable one-line rendering (JSON-like; bin as b"hex"), for logs and
// `trellis-port decode`.
std::string ToDisplayString(const Value& v);

}  // namespace trellis::protocol
