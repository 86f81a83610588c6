// The SQL that recomputes target rows from the current source state. One
// builder serves the drain (a page of keys) and the backfill (a key range),
// so both write targets the same way. Recompute by key is idempotent and
// order-free: running it again, or late, never produces a wrong row.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "catalog/model.h"

namespace trellis::drain {

// Recomputes the keys of the ledger pages whose ids are in $1 (bigint[]),
// read straight from the pages table of the catalog in `schema`. Returns one
// row: (written, deleted).
std::string ApplyPagesSql(const catalog::Transform& t, const std::string& schema);

// Recomputes every key in the range (lo, hi] of the source key order. $1 and
// $2 are text[] cursors (NULL: unbounded). `only_columns`, when set, limits
// the update of existing rows to those columns. Returns (written, deleted).
std::string ApplyRangeSql(const catalog::Transform& t,
                          const std::optional<std::vector<std::string>>& only_columns);

// The first build's form of ApplyRangeSql: appends the range's rows, for a
// target that holds no row of the range and has no key yet. A plain INSERT:
// the rows written are its affected count.
std::string AppendRangeSql(const catalog::Transform& t);

// Makes the target's primary key (the source's), ending the first build.
std::string AddKeySql(const catalog::Transform& t);

// The key `$2` rows past cursor $1 (NULL: from the start), as text[]; no row
// when fewer remain.
std::string NextCursorSql(const catalog::Transform& t);

// At most $3 keys ($1: percent of the source's pages to sample, $2: sampled
// rows per boundary) that cut the source into ranges of about equal size, as text
// arrays in key order. Only the balance depends on the sample: the ranges
// between the boundaries cover every key whatever it picks.
std::string SampleBoundariesSql(const catalog::Transform& t);

// The fresh recompute of the whole definition, for comparisons: the rows the
// target must hold, with the target's column names.
std::string DefinitionQuerySql(const catalog::Transform& t);

}  // namespace trellis::drain
