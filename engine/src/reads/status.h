// The catalog reads: status of one transform, every definition, and whether
// the fleet has live workers (from their heartbeats).
#pragma once

#include <string>
#include <vector>

#include "pg/connection.h"
#include "trellis/status.h"
#include "trellis/types.h"

namespace trellis::reads {

Result<TransformStatus> ReadStatus(pg::Connection& conn, const std::string& schema,
                                   const std::string& name);
Result<std::vector<Definition>> ReadDefinitions(pg::Connection& conn, const std::string& schema);
// `role` is "staging" or "drain". A worker is live when it heartbeated within
// the last kLiveWindowSeconds.
Result<bool> HasLiveWorkers(pg::Connection& conn, const std::string& schema,
                            const std::string& role);

inline constexpr int kLiveWindowSeconds = 5;

}  // namespace trellis::reads
