// Column quarantine (spec/engine.md "Charging a failure"): a key whose write
// fails is charged to the fewest columns whose values, left out for that
// key, let the row be written. Those columns are paused with kind
// quarantine and keep being maintained for every other key; the key's
// values in them are written as NULL (plan/quarantine_sql.h) and the key is
// recorded in quarantined_rows with its inputs and PostgreSQL's error.
// RESUME TRANSFORM t.col clears the records and rebuilds the column; rows
// still bad are charged again. This file is the one writer of
// quarantined_rows apart from that RESUME (catalog::ResumeColumn).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "catalog/model.h"
#include "drain/unit.h"
#include "pg/connection.h"
#include "plan/transform_plan.h"
#include "trellis/status.h"

namespace trellis::drain {

// The key of a failing part, in the form the plan renders it (so it matches
// the plan's quarantine and hold lookups), and its input values as jsonb
// text (nullopt when the plan cannot say or the source row is gone).
struct FailingKey {
  std::string key;
  std::optional<std::string> inputs;
};

// Reads `key` (a text[] literal as the unit gave it) through the plan.
Result<FailingKey> ReadFailingKey(pg::Connection& conn, const plan::TransformPlan& plan,
                                  const std::string& key);

// Tries to charge the failing `part` of transform `t` (its one key `key`,
// which failed with `error`) to columns, in the caller's transaction: when
// some columns explain the failure, the part is written with them in
// quarantine for the key, and their names are returned; nullopt when no
// column does (the key is then to be held), with nothing changed.
Result<std::optional<std::vector<std::string>>> ChargeToColumns(
    pg::Connection& conn, const std::string& schema, const catalog::Transform& t, const Unit& part,
    const FailingKey& key, const Status& error);

}  // namespace trellis::drain
