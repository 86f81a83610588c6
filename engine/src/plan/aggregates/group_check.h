// The define-time checks of a group transform that need PostgreSQL
// (issue 11): what the grouped query means to the server. Run by
// GroupPlan::CheckDefinition in define's transaction; each creates a
// temporary view under a savepoint and drops it, so nothing is left behind.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "grammar/ast.h"
#include "pg/connection.h"
#include "trellis/status.h"

namespace trellis::plan::aggregates {

// Checks `stmt`'s SELECT list as PostgreSQL groups it (`from` is its FROM
// clause, quoted): a temporary view of the grouped query, whose parse tree
// says which GROUP BY expression each item is (PostgreSQL matches them as in
// any query, `customer_id` and `o.customer_id` alike) and which aggregate
// each call resolved to. Refuses (validation, naming the transform): a
// GROUP BY expression that is no SELECT item, an item that is neither an
// aggregate nor a GROUP BY expression nor an expression over aggregates (not
// for SELECT DISTINCT), an aggregate that is not pg_catalog's, an aggregate
// call the grammar did not find (one Trellis does not maintain), and
// whatever PostgreSQL refuses. A HAVING is checked with the query.
Status CheckGroupedQuery(pg::Connection& conn, const grammar::TransformStmt& stmt,
                         const std::string& from);

// The columns of `table` (quoted, qualified) that `exprs` (SQL over `from`)
// read, in the table's column order, from the dependencies PostgreSQL
// records for a view over them.
Result<std::vector<std::string>> ColumnsRead(pg::Connection& conn, const std::string& table,
                                             const std::string& from,
                                             const std::vector<std::string>& exprs);

// The type PostgreSQL gives the aggregate `expr` over `from`.
Result<std::string> AggregateType(pg::Connection& conn, const std::string& transform,
                                  const std::string& from, const std::string& expr);

// The refusal of a definition: a validation error naming the transform.
Status Refusal(const std::string& transform, const std::string& what);

}  // namespace trellis::plan::aggregates
