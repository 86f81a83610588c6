// What a rebuild clears of the failures charged to a transform
// (spec/engine.md "Charging a failure"): a rebuild recomputes every key
// again, so keys still failing are charged again and the rest are free.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "pg/connection.h"
#include "trellis/status.h"

namespace trellis::catalog {

// A rebuild of `columns` of transform `id` drops their quarantined rows; a
// whole-row rebuild (nullopt) drops every quarantined row and held key.
[[nodiscard]] Status ClearCharges(pg::Connection& conn, const std::string& schema, int id,
                                  const std::optional<std::vector<std::string>>& columns);

}  // namespace trellis::catalog
