// Held keys (spec/engine.md "Charging a failure"): a key whose write fails
// with nothing chargeable to a column (its WHERE fails, the target refuses
// the row) is held. Its target row stays as it was, everything else flows,
// status counts it, and release_key recomputes it once its cause is fixed.
// A later write to the key recomputes it like any other; when that succeeds
// the hold goes (PagesUnit::Complete). This file is the one writer of the
// held_keys table apart from that release.
#pragma once

#include <string>

#include "catalog/model.h"
#include "pg/connection.h"
#include "trellis/status.h"

namespace trellis::drain {

// A transform holding this many keys is failing for far more than a few
// rows (a constraint that refuses every row, say): it is paused with kind
// failure instead of holding more. Each hold costs its own narrowing and a
// few statements, so holding every key of a large target one by one would
// take longer than fixing the cause and rebuilding.
inline constexpr int kMaxHeldKeys = 1000;

// Holds `key` (a unit key literal, sql/key_text.h) of `t` for `error`, in the caller's
// transaction; a key held already gets the new error and one more attempt.
// Pauses `t` (kind failure) once it holds kMaxHeldKeys keys.
Status HoldKey(pg::Connection& conn, const std::string& schema, const catalog::Transform& t,
               const std::string& key, const Status& error);

// Whether `t` holds `key`.
Result<bool> IsHeld(pg::Connection& conn, const std::string& schema, int transform_id,
                    const std::string& key);

// Drops the hold of `key`; false when it was not held.
Result<bool> DropHold(pg::Connection& conn, const std::string& schema, int transform_id,
                      const std::string& key);

}  // namespace trellis::drain
