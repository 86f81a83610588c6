// The SQLSTATEs the engine tells apart by name, each spelled once.
#pragma once

#include <string_view>

#include "trellis/status.h"

namespace trellis::pg {

// A lock not granted: NOWAIT, or lock_timeout ran out.
inline constexpr std::string_view kLockNotAvailable = "55P03";

// Whether `status` came from the server with SQLSTATE `code`.
inline bool HasSqlState(const Status& status, std::string_view code) {
  return status.sqlstate && *status.sqlstate == code;
}

}  // namespace trellis::pg
