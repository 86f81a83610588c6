// How PAUSE/RESUME TRANSFORM addresses read (spec/grammar.md, "Addresses").
// `a.b` can mean column b of transform a or the transform whose target is
// schema a, table b; the parser keeps the raw parts and this rule, applied
// by the engine against its catalog, decides. Pure; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "grammar/ast.h"
#include "grammar/parse_error.h"

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

// The names the engine reports and the reads take (spec/grammar.md,
// "Names you can pass back"): a transform's name is written as a statement
// would write it, RenderName(target table name), never schema-qualified (it
// is unique in the instance); an address is that, then "." and
// RenderName(column) for a column address. Both parse back to the same
// transform and column, so a caller can pass them back unchanged.
std::string RenderTransformName(std::string_view name);
std::string RenderAddress(std::string_view transform, const std::optional<std::string>& column);

// A transform's name given to a read (status, request_backfill): one name in
// statement syntax (`widget_prices`, `"Widget Prices"`), optionally
// schema-qualified, and nothing around it. A plain name folds to lower
// case, as in a statement. An error for anything else (empty text too).
std::variant<QualifiedName, ParseError> ParseTransformName(std::string_view text);

}  // namespace trellis::grammar
