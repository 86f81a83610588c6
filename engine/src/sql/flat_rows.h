// Reading 2-D text arrays (capture routing values, ledger page keys) row by
// row. They are read with unnest, never with subscripts in a loop: each
// subscript of a large array rescans it, which made a 10k-row page cost
// O(n^2).
#pragma once

#include <string>

namespace trellis::sql {

// A FROM-clause item yielding one row per array row, with columns
// `<alias>.c1 .. <alias>.c<take>` (text): the first `take` of the `width`
// values of each row of the 2-D text array `array_expr`. `row_id` must
// identify the array's row among the arrays of the enclosing query (e.g. a
// capture row id), so rows of different arrays are not mixed.
std::string FlatRows(const std::string& array_expr, const std::string& row_id, size_t width,
                     size_t take, const std::string& alias);

}  // namespace trellis::sql
