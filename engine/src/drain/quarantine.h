// Column quarantine (spec/engine.md "Charging a failure"): a key whose write
// fails is charged to the fewest columns whose values, left out for that
// key, let the row be written. Those columns are paused with kind
// quarantine and keep being maintained for every other key; the key's
// values in them are written as NULL (plan/quarantine_sql.h) and the key is
// recorded in quarantined_rows with its inputs and PostgreSQL's error.
// A later write that recomputes a quarantined key computes its values again
// (HealQuarantinedKeys): a row that was fixed or deleted leaves the
// quarantine, and a column with no row left is live again by itself.
// RESUME TRANSFORM t.col clears the records and rebuilds the column; rows
// still bad are charged again. This file is the one writer of
// quarantined_rows apart from that RESUME (catalog::ResumeColumn).
#pragma once

#include <optional>
#include <set>
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

// Reads `key` (a unit key literal as the unit gave it) through the plan.
Result<FailingKey> ReadFailingKey(pg::Connection& conn, const plan::TransformPlan& plan,
                                  const std::string& key);

// Tries to charge the failing `part` of transform `t` (its one key `key`,
// which failed with `error`) to columns, in the caller's transaction: when
// some columns explain the failure, the part is written with them in
// quarantine for the key, and their names are returned; nullopt when no
// column does (the key is then to be held), with nothing changed. A column
// whose value the target refuses (IsTargetRefusal: the row fails with that
// one value and passes with NULL there, as a CHECK does) explains nothing:
// nullopt, and `refusal` is the target's error, to hold the key with.
// `known` are columns charged for the key before (a heal charging it
// again): charging them again is not logged or counted as a new charge.
Result<std::optional<std::vector<std::string>>> ChargeToColumns(
    pg::Connection& conn, const std::string& schema, const catalog::Transform& t, const Unit& part,
    const FailingKey& key, const Status& error, Status& refusal,
    const std::set<std::string>& known = {});

// Computes again the quarantined values of `keys` of `t` (unit key literals:
// keys a unit just recomputed, recorded in quarantine by an earlier
// transaction), in the caller's transaction. A key whose values all compute
// now (its row was fixed, or deleted) leaves the quarantine with its values
// written; one still failing is charged afresh, to the columns that fail
// now, keeping the time each was first recorded. A column left with no
// recorded row goes live (catalog::LiftQuarantine), and the log says so.
// Returns an error only for a transient failure (the transaction must roll
// back); anything else leaves the key as it was.
Status HealQuarantinedKeys(pg::Connection& conn, const std::string& schema,
                           const catalog::Transform& t, const std::vector<std::string>& keys);

}  // namespace trellis::drain
