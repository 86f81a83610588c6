// apply/define: parse one statement of the grammar and run it.
#pragma once

#include <string>
#include <string_view>

#include "pg/connection.h"
#include "trellis/status.h"
#include "trellis/types.h"

namespace trellis::statements {

// Runs `text`. With `define_only`, anything but a TRANSFORM is refused.
Result<ApplyResult> Apply(pg::Connection& conn, const std::string& schema, std::string_view text,
                          bool define_only);

}  // namespace trellis::statements
