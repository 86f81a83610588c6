// The catalog's definitions as SQL, for appending to a schema-only dump.
//
// A schema-only pg_dump carries the catalog's tables, the targets and the
// capture triggers and functions, but no rows: loaded, it has targets and
// no transforms. This SQL puts the definitions back (and the catalog's
// version), so that the first drain workers on the loaded database build
// every target again (spec/engine.md "Dumps").
#pragma once

#include <string>

#include "pg/connection.h"
#include "trellis/status.h"

namespace trellis::reads {

Result<std::string> DumpDefinitionsSql(pg::Connection& conn, const std::string& schema);

}  // namespace trellis::reads
