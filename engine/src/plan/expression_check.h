// Checks the expressions of a definition with PostgreSQL itself: they must
// parse and type-check against the source, and must not call volatile
// functions, aggregates, window functions or subqueries (a recompute by key
// must give the same row every time it runs over the same source row).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pg/connection.h"
#include "plan/plan_types.h"
#include "trellis/status.h"

namespace trellis::plan {

// `select_exprs` and `where` are raw SQL over `source_from` ("tbl" AS "a").
// Returns the type PostgreSQL infers for each select expression
// (format_type text, e.g. "numeric" or "character varying(20)").
// REQUIRES: inside a transaction (a temporary view is created and dropped).
Result<std::vector<std::string>> CheckExpressions(pg::Connection& conn,
                                                  const std::string& transform_name,
                                                  std::string_view source_from,
                                                  const std::vector<std::string_view>& select_exprs,
                                                  std::optional<std::string_view> where);

// CheckExpressions on `conn` for the transform `transform_name`, in the form
// a plan's CheckDefinition and a row kind's CheckColumn take. `conn` must outlive it.
ExpressionCheck ExpressionCheckFor(pg::Connection& conn, std::string transform_name);

// The COLLATE clause (" COLLATE schema.name", both names quoted) that gives
// a new column the collation column `column` of `relation` (regclass text)
// has, or "" when that is its type's own collation (what ADD COLUMN and
// ALTER COLUMN TYPE give without a clause) or the type has none. CREATE
// TABLE AS gives a column its expression's collation, ADD COLUMN name type
// the type's: ALTER TRANSFORM types a column it adds or changes by a
// zero-row table made from the new expression, and this clause makes the
// column the one a define would have made (spec/engine.md "Folded delta
// rows").
Result<std::string> CollateClauseOf(pg::Connection& conn, const std::string& relation,
                                    const std::string& column);

// Rewrites a database error raised while checking a definition into a
// validation error that names the transform.
Status DefinitionError(const std::string& transform_name, const Status& db_error);

}  // namespace trellis::plan
