// Resolving an address (spec/grammar.md, "Addresses") against the catalog:
// the transform it names and, for a column address, the column. Used by
// PAUSE/RESUME and by the quarantine reads, which take the same addresses.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "catalog/model.h"
#include "pg/connection.h"
#include "trellis/status.h"

namespace trellis::catalog {

struct ResolvedAddress {
  Transform transform;
  std::optional<std::string> column;
};

// The first reading of `parts` (grammar::AddressReadings) that names an
// existing transform; `lock` as for LoadTransform. not_found names what is
// missing: the transform, or the column of the transform it found.
[[nodiscard]] Result<ResolvedAddress> ResolveAddress(pg::Connection& conn,
                                                     const std::string& schema,
                                                     const std::vector<std::string>& parts,
                                                     bool lock);

}  // namespace trellis::catalog
