// Source tables: resolving a table the user named, and registering it with
// the catalog (which installs its capture triggers).
#pragma once

#include <string>

#include "catalog/model.h"
#include "grammar/ast.h"
#include "pg/connection.h"
#include "trellis/status.h"

namespace trellis::catalog {

struct ResolvedTable {
  std::string oid;
  std::string schema_name;
  std::string table_name;
  std::vector<std::string> key_columns;  // empty when there is no primary key
  std::vector<std::string> key_types;
};

// Finds a table by its (optionally schema-qualified) name, with its primary
// key. not_found when no such table exists; validation when it is not a table.
Result<ResolvedTable> ResolveTable(pg::Connection& conn, const grammar::QualifiedName& name);

// The registered source for `table`, registering it and installing capture
// when no transform read it yet.
// REQUIRES: inside a transaction.
Result<Source> EnsureSource(pg::Connection& conn, const std::string& schema,
                            const ResolvedTable& table);

// Reinstalls the capture of `source` after a disruption, on the table under
// its current name (a rename since the define is followed). not_found, with
// the fix, when the table is gone.
// REQUIRES: inside a transaction.
Status ReinstallCapture(pg::Connection& conn, const std::string& schema, const Source& source);

// Removes `source` and its capture when no transform reads it any more.
Status ReleaseSourceIfUnused(pg::Connection& conn, const std::string& schema, const Source& source);

}  // namespace trellis::catalog
