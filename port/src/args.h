// Reading an op's arguments. Each helper returns the value or a validation
// Status naming the argument and the type it expects, so a handler's
// argument checks read as one line each:
//
//   auto target = RequireString(args, "target");
//   if (!target.ok()) return target.status();
//
// An optional argument that is absent or nil takes its default. A string
// argument must be UTF-8 without NUL bytes: anything else is refused with
// the argument's name and the byte position, before libpq sees it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "trellis/protocol/value.h"
#include "trellis/status.h"

namespace trellis::port {

// The argument's value, or nullptr when `args` has no such key.
const protocol::Value* FindArg(const protocol::Map& args, std::string_view name);

// "nil", "bool", "integer", "float", "string", "binary", "array" or "map".
std::string_view TypeName(const protocol::Value& value);

// Any value, nil included; missing is an error.
Result<protocol::Value> RequireValue(const protocol::Map& args, std::string_view name);

// `max_bytes` bounds the string's length; a longer one is a validation error
// naming the limit, followed by `fix` when one is given.
Result<std::string> RequireString(const protocol::Map& args, std::string_view name,
                                  std::size_t max_bytes = std::numeric_limits<std::size_t>::max(),
                                  std::string_view fix = {});
// RequireString without the copy, for arguments that may be megabytes (a
// statement). The view is valid as long as `args`.
Result<std::string_view> RequireStringView(const protocol::Map& args, std::string_view name,
                                           std::size_t max_bytes, std::string_view fix = {});
Result<std::string> OptionalString(const protocol::Map& args, std::string_view name,
                                   std::string fallback);

Result<int64_t> RequireInt(const protocol::Map& args, std::string_view name,
                           int64_t min = std::numeric_limits<int64_t>::min(),
                           int64_t max = std::numeric_limits<int64_t>::max());
Result<int64_t> OptionalInt(const protocol::Map& args, std::string_view name, int64_t fallback,
                            int64_t min = std::numeric_limits<int64_t>::min(),
                            int64_t max = std::numeric_limits<int64_t>::max());

Result<bool> RequireBool(const protocol::Map& args, std::string_view name);
Result<bool> OptionalBool(const protocol::Map& args, std::string_view name, bool fallback);

}  // namespace trellis::port
