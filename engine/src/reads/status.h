// The catalog reads: status of one transform, every definition, and whether
// the fleet has live workers (from their heartbeats).
#pragma once

#include <string>
#include <vector>

#include "catalog/model.h"
#include "pg/connection.h"
#include "trellis/status.h"
#include "trellis/types.h"

namespace trellis::reads {

// `name` is a transform's name as the reads take it: in statement syntax,
// optionally schema-qualified (grammar::ParseTransformName). TransformStatus
// and Definition name transforms in the form the engine reports
// (grammar::RenderTransformName), which these take back unchanged.
Result<TransformStatus> ReadStatus(pg::Connection& conn, const std::string& schema,
                                   const std::string& name);
// Loads the transform `name` (as for ReadStatus) names; `lock` as for
// catalog::LoadTransform. A validation error for text that is not a name.
Result<catalog::Transform> LoadNamedTransform(pg::Connection& conn, const std::string& schema,
                                              std::string_view name, bool lock = false);
Result<std::vector<Definition>> ReadDefinitions(pg::Connection& conn, const std::string& schema);
// `role` is "staging" or "drain". A worker is live when it heartbeated within
// the last kLiveWindowSeconds.
Result<bool> HasLiveWorkers(pg::Connection& conn, const std::string& schema,
                            const std::string& role);

inline constexpr int kLiveWindowSeconds = 5;

}  // namespace trellis::reads
