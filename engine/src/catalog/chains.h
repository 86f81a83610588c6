// Chains of transforms: a transform whose input is another transform's
// target reads it like any table (capture on the upstream target carries
// the upstream's drains to it), and these are the catalog reads that make a
// chain behave as one: a downstream's first build waits for its upstreams
// to be live, status names the paused columns upstream, and an upstream
// that others read cannot be dropped. An edge is found by name: an input's
// source is a transform's target when their schema and table names agree
// (as reads/convergence.cc does).
#pragma once

#include <string>
#include <vector>

#include "pg/connection.h"
#include "trellis/status.h"

namespace trellis::catalog {

// A SQL condition, true when transform `transform_id_expr` (an SQL
// expression, e.g. "t.id") reads the target of a transform that is not
// live: its first build waits until every upstream is live.
std::string UpstreamNotLiveSql(const std::string& schema, const std::string& transform_id_expr);

// "target.column" of every paused column of a transform upstream of
// `transform_id` (at any depth) that the transform reading that target
// names in its definition, sorted.
Result<std::vector<std::string>> PausedUpstreamColumns(pg::Connection& conn,
                                                       const std::string& schema, int transform_id);

// The names of the transforms that read the target of `transform_id`,
// sorted.
Result<std::vector<std::string>> ReadersOf(pg::Connection& conn, const std::string& schema,
                                           int transform_id);

// A SQL condition, true when another transform reads the target of
// transform `transform_id_expr` (an SQL expression, e.g. "s.transform_id"):
// a stage its owner reads, or the upstream of a chain. A drain of such a
// transform makes capture rows for the next, so it wakes staging
// (drain/drain_page.h). Evaluated in the drain's own claim, so a chain
// defined a moment ago is known at its upstream's very next drain: no
// cached set, nothing to refresh.
std::string ReadByOthersSql(const std::string& schema, const std::string& transform_id_expr);

// The primary key a transform's target will have, for `relid` when it is a
// transform's target whose first build has not made the key yet: (name,
// type) of each key column, in key order. Empty when `relid` is no target.
Result<std::vector<std::pair<std::string, std::string>>> PendingTargetKey(pg::Connection& conn,
                                                                          const std::string& schema,
                                                                          const std::string& relid);

}  // namespace trellis::catalog
