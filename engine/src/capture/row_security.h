// Row-level security on what a transform reads. A transform's target is a
// copy its readers query directly: the policies of the tables it was
// computed from never see them. So a define over a table with row-level
// security enabled (on it or on any relation under it) is refused unless
// the statement says WITHOUT ROW SECURITY, and security enabled after a
// define is reported (status, the staging worker's log) rather than
// acted on: the rows are already copied, and pausing would only stop the
// target from following its source (spec/engine.md "Row-level security").
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "grammar/ast.h"
#include "pg/connection.h"
#include "trellis/status.h"

namespace trellis::capture {

// A validation error naming the first table of `stmt` (FROM or JOIN), or a
// relation under one, that has row-level security enabled, unless `stmt`
// says WITHOUT ROW SECURITY. A name that resolves to no table is left to
// define's own refusal.
[[nodiscard]] Status RefuseRowSecurity(pg::Connection& conn, const grammar::TransformStmt& stmt);

struct RowSecurityExposure {
  std::string transform;  // its name as statements write it
  std::string table;      // "schema.table" with row-level security enabled
};

// Every table with row-level security enabled that a transform defined
// without WITHOUT ROW SECURITY reads (through its sources, the relations
// under them, and a hidden join part), by transform and table; only those
// of `transform_id` when it is set.
Result<std::vector<RowSecurityExposure>> FindRowSecurityExposures(
    pg::Connection& conn, const std::string& schema, std::optional<int> transform_id = {});

}  // namespace trellis::capture
