#include "args.h"

#include "trellis/protocol/text.h"

namespace trellis::port {
namespace {

Status Missing(std::string_view name, std::string_view expected) {
  return Status::Validation("missing required argument \"" + std::string(name) + "\" (" +
                            std::string(expected) + ")");
}

Status WrongType(std::string_view name, std::string_view expected, const protocol::Value& got) {
  return Status::Validation("argument \"" + std::string(name) + "\" must be " +
                            std::string(expected) + ", got " + std::string(TypeName(got)));
}

// A string argument reaches libpq as a C string in UTF-8: a NUL byte would
// cut it short there (and name another object), invalid UTF-8 would come
// back as a database error naming no argument.
Result<std::string_view> CheckedText(const protocol::Value& value, std::string_view name) {
  const std::string& text = value.as_string();
  if (auto fault = protocol::FindTextFault(text)) {
    return Status::Validation("argument \"" + std::string(name) + "\" contains " + fault->what +
                              " at byte " + std::to_string(fault->position) +
                              "; send UTF-8 text without NUL bytes");
  }
  return std::string_view(text);
}

// The argument, or nullptr when it is absent or nil (an optional argument's
// "use the default").
const protocol::Value* FindPresent(const protocol::Map& args, std::string_view name) {
  const protocol::Value* value = FindArg(args, name);
  return (value && !value->is_nil()) ? value : nullptr;
}

Result<int64_t> ToInt(const protocol::Value& value, std::string_view name, int64_t min,
                      int64_t max) {
  const std::string range = "an integer in " + std::to_string(min) + ".." + std::to_string(max);
  if (!value.is_int()) return WrongType(name, range, value);
  const std::optional<int64_t> i = value.as_int64();
  if (!i || *i < min || *i > max) {
    return Status::Validation("argument \"" + std::string(name) + "\" must be " + range + ", got " +
                              protocol::ToDisplayString(value));
  }
  return *i;
}

}  // namespace

const protocol::Value* FindArg(const protocol::Map& args, std::string_view name) {
  for (const auto& [key, value] : args) {
    if (key.is_string() && key.as_string() == name) return &value;
  }
  return nullptr;
}

std::string_view TypeName(const protocol::Value& value) {
  if (value.is_nil()) return "nil";
  if (value.is_bool()) return "bool";
  if (value.is_int()) return "integer";
  if (value.is_float()) return "float";
  if (value.is_string()) return "string";
  if (value.is_binary()) return "binary";
  if (value.is_array()) return "array";
  return "map";
}

Result<protocol::Value> RequireValue(const protocol::Map& args, std::string_view name) {
  const protocol::Value* value = FindArg(args, name);
  if (!value) return Missing(name, "any value");
  return *value;
}

Result<std::string_view> RequireStringView(const protocol::Map& args, std::string_view name,
                                           std::size_t max_bytes, std::string_view fix) {
  const protocol::Value* value = FindPresent(args, name);
  if (!value) return Missing(name, "a string");
  if (!value->is_string()) return WrongType(name, "a string", *value);
  if (value->as_string().size() > max_bytes) {
    return Status::Validation("argument \"" + std::string(name) + "\" is " +
                              std::to_string(value->as_string().size()) +
                              " bytes, over its limit of " + std::to_string(max_bytes) + " bytes" +
                              (fix.empty() ? "" : "; " + std::string(fix)));
  }
  return CheckedText(*value, name);
}

Result<std::string> RequireString(const protocol::Map& args, std::string_view name,
                                  std::size_t max_bytes, std::string_view fix) {
  auto text = RequireStringView(args, name, max_bytes, fix);
  if (!text.ok()) return text.status();
  return std::string(text.value());
}

Result<std::string> OptionalString(const protocol::Map& args, std::string_view name,
                                   std::string fallback) {
  const protocol::Value* value = FindPresent(args, name);
  if (!value) return fallback;
  if (!value->is_string()) return WrongType(name, "a string", *value);
  auto text = CheckedText(*value, name);
  if (!text.ok()) return text.status();
  return std::string(text.value());
}

Result<int64_t> RequireInt(const protocol::Map& args, std::string_view name, int64_t min,
                           int64_t max) {
  const protocol::Value* value = FindPresent(args, name);
  if (!value) return Missing(name, "an integer");
  return ToInt(*value, name, min, max);
}

Result<int64_t> OptionalInt(const protocol::Map& args, std::string_view name, int64_t fallback,
                            int64_t min, int64_t max) {
  const protocol::Value* value = FindPresent(args, name);
  if (!value) return fallback;
  return ToInt(*value, name, min, max);
}

Result<bool> RequireBool(const protocol::Map& args, std::string_view name) {
  const protocol::Value* value = FindPresent(args, name);
  if (!value) return Missing(name, "a boolean");
  if (!value->is_bool()) return WrongType(name, "a boolean", *value);
  return value->as_bool();
}

Result<bool> OptionalBool(const protocol::Map& args, std::string_view name, bool fallback) {
  const protocol::Value* value = FindPresent(args, name);
  if (!value) return fallback;
  if (!value->is_bool()) return WrongType(name, "a boolean", *value);
  return value->as_bool();
}

}  // namespace trellis::port
