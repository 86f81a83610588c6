// The capture functions: one PL/pgSQL trigger function per source and event,
// in the catalog schema, appending one capture row per statement (the row's
// format is in spec/engine.md "Capture").
//
// Privilege model: a function runs SECURITY DEFINER as the role that
// installed it (the engine's role, which owns the catalog), with every name
// in its body qualified, and EXECUTE revoked from PUBLIC (a trigger does not
// need it to fire). So a writer with only DML rights on a source can keep
// writing it after a define, without any right on the catalog schema.
//
// Text forms: a function whose routed columns' text depends on a setting
// pins search_path and the settings that fix how a value reads as text
// (pg::kTextFormSettings), since it turns routed values to text in the
// writer's session and the engine parses them in its own; the others pin
// nothing, as each pinned setting costs every call
// (capture/function_settings.h).
#pragma once

#include <string>
#include <string_view>

#include "catalog/model.h"
#include "pg/connection.h"
#include "trellis/status.h"

namespace trellis::capture {

// `body` as a dollar-quoted string whose tag occurs nowhere in it, so no text
// in the body (an identifier holding `$trellis$`, say) can end the quote.
std::string DollarQuoted(std::string_view body);

// The CREATE OR REPLACE FUNCTION statement of `source`'s capture function for
// `event`, in the catalog in `schema`, with the settings pinned or not.
std::string CreateFunctionSql(const std::string& schema, const catalog::Source& source,
                              std::string_view event, bool pinned);

// (Re)creates the four capture functions of `source`, with EXECUTE revoked
// from PUBLIC, pinning the settings when the routed columns in its catalog
// row need them. REQUIRES: inside a transaction, `source.routing_columns`
// as the catalog row has them.
Status InstallFunctions(pg::Connection& conn, const std::string& schema,
                        const catalog::Source& source);

// Reinstalls the functions of every source whose pinned settings no longer
// match its routed columns' types (a column's type was changed since they
// were installed, or they were installed by an engine that pinned every
// source). Returns how many sources it reinstalled.
// REQUIRES: inside a transaction.
Result<int> RepinChangedSources(pg::Connection& conn, const std::string& schema);

// Drops the capture functions of source `source_id` (those that exist).
Status RemoveFunctions(pg::Connection& conn, const std::string& schema, int source_id);

}  // namespace trellis::capture
