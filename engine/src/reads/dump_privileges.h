// The target privileges a dump carries: the readers and WITHOUT ROW
// SECURITY of each transform, and the grants themselves, which a dump made
// with pg_dump's --no-acl (as `mix ecto.dump` makes it) leaves out
// (spec/engine.md "Dumps", "Target privileges").
#pragma once

#include <string>

#include "pg/connection.h"
#include "trellis/status.h"

namespace trellis::reads {

// SQL lines to append after the transforms' rows: one UPDATE per transform
// that has readers or WITHOUT ROW SECURITY, and one DO block per reader that
// grants it SELECT on the target when the role exists where the dump is
// loaded (roles are the cluster's, and a schema dump carries none), and
// warns otherwise. REQUIRES: inside the dump's snapshot.
Result<std::string> DumpTargetPrivilegesSql(pg::Connection& conn, const std::string& schema);

}  // namespace trellis::reads
