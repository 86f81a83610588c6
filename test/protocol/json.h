// A small JSON reader for the conformance vectors (no JSON library is among
// the project's dependencies). Objects keep their members in file order.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace trellis::testing {

struct JsonError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// One parsed JSON value. Plain data.
class Json {
 public:
  enum class Type { kNull, kBool, kNumber, kString, kArray, kObject };

  // Throws JsonError (with the byte offset) on malformed input.
  static Json Parse(std::string_view text);

  Type type() const { return type_; }
  bool is_null() const { return type_ == Type::kNull; }
  bool is_string() const { return type_ == Type::kString; }
  bool is_number() const { return type_ == Type::kNumber; }
  bool is_array() const { return type_ == Type::kArray; }
  bool is_object() const { return type_ == Type::kObject; }

  // Each throws JsonError when the type does not match.
  bool as_bool() const;
  double as_double() const;
  const std::string& as_string() const;
  const std::vector<Json>& as_array() const;
  const std::vector<std::pair<std::string, Json>>& as_object() const;

  // Object member by name: nullptr when absent (or not an object).
  const Json* Find(std::string_view key) const;
  // Object member by name; throws JsonError when absent.
  const Json& At(std::string_view key) const;

 private:
  friend class JsonParser;
  Type type_ = Type::kNull;
  bool bool_ = false;
  std::string text_;  // decoded string, or a number's literal text
  std::vector<Json> items_;
  std::vector<std::pair<std::string, Json>> members_;
};

}  // namespace trellis::testing
