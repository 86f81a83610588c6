#pragma once

#include <string>

#include "status.h"

namespace trellis::testkit {

// Returns the directory holding the PostgreSQL server binaries (initdb and
// postgres): $TRELLIS_PG_BIN when set (and then only there, so a bad
// override is reported rather than silently ignored), else
// /usr/lib/postgresql/15/bin, else the output of `pg_config --bindir`.
Result<std::string> FindPgBinDir();

// Returns the absolute path of the executable `name` found on $PATH.
Result<std::string> FindOnPath(const std::string& name);

}  // namespace trellis::testkit
