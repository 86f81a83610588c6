// Which session settings a source's capture functions pin. A capture
// function turns each routed value to text in the writer's session, and the
// engine reads that text back in its own; the text of a date, a timestamp,
// an interval, a float or a bytea depends on the writer's DateStyle,
// IntervalStyle, extra_float_digits and bytea_output, and that of a regclass
// (or another reg* type) on its search_path. A function whose routed
// columns have such a type pins all five settings (search_path plus
// pg::kTextFormSettings) for the length of the call.
//
// Pinning is not free: PostgreSQL saves, sets and restores a function's SET
// clauses on every call, which cost a single-row autocommit INSERT about
// 16 us of 190 us (bench/README.md, capture c2). So a function whose routed
// columns all have a type whose text no setting changes (integers, text,
// numeric, uuid, boolean, json, enums, and domains and arrays of those) has
// no SET clause at all. Its body needs none for safety either: every name
// in it is schema-qualified or a transition table, which the parser finds
// before any schema, and it calls no function or operator by an unqualified
// name, so the writer's search_path cannot redirect it although it runs as
// the definer (spec/engine.md "Capture", "Privilege model").
//
// A column's type can change after install (ALTER COLUMN ... TYPE): the
// staging worker's capture check (capture/functions.h RepinChangedSources)
// reinstalls the functions of any source whose pins no longer match its
// columns, within about a second.
#pragma once

#include <string>
#include <vector>

#include "catalog/model.h"
#include "pg/connection.h"
#include "trellis/status.h"

namespace trellis::capture {

// Whether the capture functions of source `source_id` must pin the
// settings, from the types of its routed columns now. True, to be safe,
// when a routed column cannot be found.
Result<bool> NeedsPinnedSettings(pg::Connection& conn, const std::string& schema, int source_id);

// The SET clauses of a capture function (with a leading space), or "".
std::string SetClauses(bool pinned);

// The sources whose capture functions pin settings when their routed
// columns no longer need them, or the reverse (id and routing columns set),
// each with its catalog row locked. A source whose row another transaction
// holds (a define or RESUME installing it right now) is skipped: the next
// check sees it.
// REQUIRES: inside a transaction.
Result<std::vector<catalog::Source>> SourcesWithStalePins(pg::Connection& conn,
                                                          const std::string& schema);

}  // namespace trellis::capture
