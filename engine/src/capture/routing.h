// Routing values as readers take them from capture rows (the row format is
// in spec/engine.md "Capture"). A source's routing layout, the columns its
// capture rows carry (`sources.routing_columns`), is append-only: key columns
// first, then whatever GROUP BY and JOIN readers add, never reordered or
// removed, so a position always names the same column. Each capture row's
// 2-D `routing` array records its own width in its header (the layout's
// width when its trigger ran), and every capture row is read by that width,
// never the layout's current one: rows written before a column joined the
// layout are read right by every reader.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "catalog/model.h"
#include "pg/connection.h"
#include "trellis/status.h"

namespace trellis::capture {

// The width of one capture row, as a column expression over the capture
// table: evaluate it once per row (e.g. in the RETURNING of the statement
// that consumes capture rows) and hand it to RoutingRows as `width`.
inline constexpr std::string_view kRoutingWidthSql = "array_length(routing, 2)";

// The number of row versions one capture row carries, evaluated once per
// capture row for the same reason: a reader that asks the array itself once
// per version detoasts the whole array each time, which made staging a
// 10,000-row UPDATE take a second and a 100,000-row one minutes.
inline constexpr std::string_view kRoutingVersionsSql = "array_length(routing, 1)";

// A FROM-clause item yielding one row per row version of each capture row
// in `rows` (a relation alias with columns id, routing and width, see
// kRoutingWidthSql), with columns `<alias>.c1 .. <alias>.c<m>` (text): the
// values at the given 1-based layout `positions`. A capture row narrower
// than the highest position yields nothing: it was written before that
// column joined the layout, so it predates every reader that needs it (the
// reader's first build covers it; see EnsureRoutingColumns).
std::string RoutingRows(std::string_view rows, const std::vector<size_t>& positions,
                        std::string_view alias);

// The 1-based layout positions of `columns` in `source`'s routing layout,
// appending those it lacks (in order) and regenerating its capture
// functions, so writes committed after this carry them. Updates `source`.
// REQUIRES: inside a transaction.
Result<std::vector<size_t>> EnsureRoutingColumns(pg::Connection& conn, const std::string& schema,
                                                 catalog::Source& source,
                                                 const std::vector<std::string>& columns);

}  // namespace trellis::capture
