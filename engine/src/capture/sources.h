// Sources: the tables transforms read, as capture owns them. Resolving a
// table the user named, registering it in the catalog with its capture
// installed, reinstalling capture after a disruption, and releasing it when
// its last reader is dropped. The catalog holds the rows; only this file
// writes them.
#pragma once

#include <string>
#include <vector>

#include "catalog/model.h"
#include "grammar/ast.h"
#include "pg/connection.h"
#include "trellis/status.h"

namespace trellis::capture {

struct ResolvedTable {
  std::string oid;
  std::string schema_name;
  std::string table_name;
  std::vector<std::string> key_columns;  // empty when there is no primary key
  std::vector<std::string> key_types;
  // Key columns that may hold NULL: a Trellis target's key taken as the
  // table's key (catalog::Source::nullable_key_columns).
  std::vector<std::string> nullable_key_columns;
};

// The catalog source a draft names for `table`: its names and key, not
// registered yet (id 0, no routing beyond the key).
catalog::Source DraftSource(const ResolvedTable& table);

// Finds a table by its (optionally schema-qualified) name, with its primary
// key. not_found when no such table exists; validation when it is not a table.
Result<ResolvedTable> ResolveTable(pg::Connection& conn, const grammar::QualifiedName& name);

// The registered source for `table`, registering it and installing its
// capture when no transform read it yet, on the table and on every relation
// under it (partitions, inheritance children).
// REQUIRES: inside a transaction.
Result<catalog::Source> EnsureSource(pg::Connection& conn, const std::string& schema,
                                     const ResolvedTable& table);

// Captures `relid` for `source` as well, recording it in source_relations:
// a partition or inheritance child of the source's table (`parent_relid`),
// which fires its own triggers, not the parent's, for writes that name it.
// Released and reinstalled with the source. Records the link's attachment
// (capture/attachment.h) as it is now.
// REQUIRES: inside a transaction, `relid` locked in a mode that conflicts
// with ATTACH, DETACH, INHERIT and NO INHERIT (SHARE ROW EXCLUSIVE does).
// `node` is its quoted qualified name, kept for status after it is dropped.
Status AddRelation(pg::Connection& conn, const std::string& schema, const catalog::Source& source,
                   const std::string& relid, const std::string& parent_relid,
                   const std::string& node);

// Reinstalls the capture of `source` after a disruption, on the table under
// its current name (a rename since the define is followed and recorded) and
// on each of its other relations that still exists.
// not_found, with the fix, when the table is gone.
// REQUIRES: inside a transaction.
Status Reinstall(pg::Connection& conn, const std::string& schema, const catalog::Source& source);

// Removes `source`, its capture on every relation and its pending capture
// rows when no transform reads it any more.
// REQUIRES: inside a transaction.
Status ReleaseIfUnused(pg::Connection& conn, const std::string& schema,
                       const catalog::Source& source);

}  // namespace trellis::capture
