// Who may read a target: the roles a TRANSFORM's GRANT SELECT TO names are
// granted SELECT on the target when it is defined, and recorded with the
// transform (`transforms.readers`), so a dump carries them too. Rebuilds and
// ALTER TRANSFORM change the target in place and keep the grant
// (spec/engine.md "Target privileges").
#pragma once

#include <string>

#include "grammar/ast.h"
#include "pg/connection.h"
#include "trellis/status.h"

namespace trellis::statements {

// Grants SELECT on the just-defined target of `stmt` to its readers and
// records them and its WITHOUT ROW SECURITY with the transform. A role that
// does not exist is `not_found`; `public` is PostgreSQL's PUBLIC, as in
// GRANT. REQUIRES: inside the define's transaction, after the transform
// is stored.
[[nodiscard]] Status GrantTargetReaders(pg::Connection& conn, const std::string& schema,
                                        const grammar::TransformStmt& stmt);

}  // namespace trellis::statements
