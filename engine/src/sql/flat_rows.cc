#include "sql/flat_rows.h"

#include <vector>

#include "sql/quote.h"

namespace trellis::sql {

std::string FlatRows(const std::string& array_expr, const std::string& row_id, size_t width,
                     size_t take, const std::string& alias) {
  if (width == 1) {
    // The common case (a one-column key): every element is a row.
    return "LATERAL (SELECT u.v AS c1 FROM unnest(" + array_expr + ") AS u(v)) AS " + alias;
  }
  // unnest flattens row-major: element ord belongs to row (ord-1)/width,
  // column (ord-1)%width + 1. Fold each row's first `take` elements back.
  std::vector<std::string> columns;
  for (size_t c = 1; c <= take; ++c) {
    columns.push_back("max(u.v) FILTER (WHERE (u.ord - 1) % " + std::to_string(width) + " = " +
                      std::to_string(c - 1) + ") AS c" + std::to_string(c));
  }
  return "LATERAL (SELECT " + Join(columns, ", ") + " FROM unnest(" + array_expr +
         ") WITH ORDINALITY AS u(v, ord) GROUP BY " + row_id + ", (u.ord - 1) / " +
         std::to_string(width) + ") AS " + alias;
}

}  // namespace trellis::sql
