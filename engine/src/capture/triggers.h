// Capture: the triggers that record, inside each writer's transaction, which
// rows a statement changed. See spec/engine.md "Capture".
#pragma once

#include <string>

#include "catalog/model.h"
#include "pg/connection.h"
#include "trellis/status.h"

namespace trellis::capture {

// The four events a source is captured on.
inline constexpr const char* kEvents[] = {"insert", "update", "delete", "truncate"};

// Name of the trigger for `event` of the catalog in `schema` (distinct per
// catalog, so two catalogs can capture the same table).
std::string TriggerName(const std::string& schema, const std::string& event);

// (Re)creates the capture functions and triggers of `source`, set ENABLE
// ALWAYS so they fire under session_replication_role = replica too.
// REQUIRES: inside a transaction.
Status Install(pg::Connection& conn, const std::string& schema, const catalog::Source& source);

// Drops the capture triggers and functions of `source`.
Status Remove(pg::Connection& conn, const std::string& schema, const catalog::Source& source);

}  // namespace trellis::capture
