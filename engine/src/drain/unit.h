// A unit of work: one write of a transform's target over a set of keys (a
// drain's ledger pages, a build's key range (first build, rebuild, column rebuild); later
// a self-check range). Every unit runs through the UnitExecutor
// (unit_executor.h), which owns savepoints, the failure classifier and the
// narrowing of data errors; a unit only says how to apply itself, how to
// cut itself in two, and how to wait for a retry.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "pg/connection.h"
#include "plan/transform_plan.h"
#include "trellis/status.h"

namespace trellis::drain {

class Unit {
 public:
  virtual ~Unit() = default;

  // "pages", "build_range", "rebuild": the kind of work, as status and the
  // drain_failures table name it.
  virtual std::string_view kind() const = 0;
  // What it covers, for logs and failure records: keys or a key range.
  virtual std::string Describe() const = 0;
  // Writes the target. Returns the rows written (a count of work).
  // REQUIRES: inside a transaction; the executor wraps it in a savepoint.
  virtual Result<long> Apply(pg::Connection& conn) = 0;
  // The unit cut into parts (two halves, or its one key) covering the same
  // keys, to narrow a data error down to the keys that fail; empty when it
  // cannot be cut further.
  virtual Result<std::vector<std::unique_ptr<Unit>>> Split(pg::Connection& conn) = 0;
  // The unit was applied whole: take it off its queue (delete its pages or
  // its job row). Called before the executor settles earlier charges.
  virtual Status Complete(pg::Connection& conn) = 0;
  // The unit failed (its `failed` parts did; the others were applied in
  // this transaction): leave what must be redone for a retry with backoff.
  // REQUIRES: inside the transaction that applied the other parts.
  virtual Status Defer(pg::Connection& conn, const std::vector<const Unit*>& failed,
                       const Status& error) = 0;

  // Failure charging (charging.h) of a part the executor narrowed to:
  // the one unit key it covers (plan::PlanTarget::unit_key), as a key
  // literal (sql/key_text.h) (nullopt when it covers no single key, or the
  // kind cannot say).
  virtual Result<std::optional<std::string>> OneKey(pg::Connection&) const {
    return std::optional<std::string>();
  }
  // After Complete: the keys the unit recomputed that hold quarantined
  // values recorded by an earlier transaction (quarantine.h), each a unit
  // key literal, for the charging hook to compute again (a write may have fixed
  // or deleted their rows). None by default: a build's rebuild clears the
  // records before it runs.
  virtual std::vector<std::string> QuarantinedKeys() const { return {}; }
  // The same work written by `plan` (the transform bound again with some
  // columns in quarantine); nullptr when the kind cannot be rebound, and its
  // failures are then not charged to columns or keys.
  virtual std::unique_ptr<Unit> Rebound(const plan::TransformPlan&) const { return nullptr; }
};

// A unit of one step that cannot be cut (it covers no keys to narrow to)
// and leaves nothing on a queue: the step that issued it redoes it, once a
// charge's backoff has passed.
class UncutUnit : public Unit {
 public:
  Result<std::vector<std::unique_ptr<Unit>>> Split(pg::Connection&) override {
    return std::vector<std::unique_ptr<Unit>>{};
  }
  Status Complete(pg::Connection&) override { return Status::OK(); }
  Status Defer(pg::Connection&, const std::vector<const Unit*>&, const Status&) override {
    return Status::OK();
  }
};

}  // namespace trellis::drain
