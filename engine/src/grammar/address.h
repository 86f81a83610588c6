// How PAUSE/RESUME TRANSFORM addresses read (spec/grammar.md, "Addresses").
// `a.b` can mean column b of transform a or the transform whose target is
// schema a, table b; the parser keeps the raw parts and this rule, applied
// by the engine against its catalog, decides. Pure; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "grammar/ast.h"

namespace trellis::grammar {

// One reading of an address: a transform's target table and, for a column
// address, the column.
struct TransformAddress {
  QualifiedName target;
  std::optional<std::string> column;

  bool operator==(const TransformAddress&) const = default;
};

// The readings of `parts` (1 to 3 parts, as the parser produces them) in
// order of preference. The engine uses the first reading whose target names
// an existing transform, and reports "no such transform" if none does:
//   a      -> [transform a]
//   a.b    -> [column b of transform a, transform a.b]
//   a.b.c  -> [column c of transform a.b]
// Returns no readings for an empty or longer list.
std::vector<TransformAddress> AddressReadings(const std::vector<std::string>& parts);

}  // namespace trellis::grammar
