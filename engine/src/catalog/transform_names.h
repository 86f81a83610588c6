// The names of the catalog's transforms, for the failure counters
// (trellis/charging_metrics.h), which must exist before a transform's first
// failure.
#pragma once

#include <string>
#include <vector>

#include "pg/connection.h"
#include "trellis/status.h"

namespace trellis::catalog {

// The name of every transform in the catalog, a grouped join's hidden part
// included, by name: the `transform` labels the failure counters take.
[[nodiscard]] Result<std::vector<std::string>> TransformNames(pg::Connection& conn,
                                                              const std::string& schema);

}  // namespace trellis::catalog
