// The charging seam: where a unit's failure that retrying alone will not
// cure is charged (spec/engine.md "Charging a failure"). The executor
// narrows a data error to the parts that fail (one key each) and hands them
// to ChargeParts, which charges each to the smallest thing that caused it:
// the columns whose values fail for the key (quarantine.h), or else the key
// itself (held_keys.h). A part so charged is settled: the unit completes
// and everything else flows. What is left (a part with no key, a unit of a
// kind that cannot be rebound, a failure of another class) goes to Charge,
// which records a drain failure the status shows and leaves the unit for a
// retry with backoff.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "catalog/model.h"
#include "drain/failure_class.h"
#include "drain/unit.h"
#include "pg/connection.h"
#include "trellis/status.h"

namespace trellis::drain {

struct Failure {
  int transform_id = 0;
  std::string transform_name;
  std::string unit_kind;  // Unit::kind()
  FailureClass failure_class = FailureClass::kOther;
  Status error;                    // the first failing part's error
  std::vector<std::string> parts;  // Unit::Describe() of each failing part
};

class ChargingHook {
 public:
  virtual ~ChargingHook() = default;
  // Charges what it can of the `failed` parts of a unit of `t` (each failed
  // with a data error, the first with `error`), in the unit's transaction:
  // a part it charges is settled. Returns the parts left uncharged.
  virtual Result<std::vector<const Unit*>> ChargeParts(pg::Connection& conn,
                                                       const std::string& schema,
                                                       const catalog::Transform& t,
                                                       const std::vector<const Unit*>& failed,
                                                       const Status& error) = 0;
  // Records `failure` (what was left uncharged) as a drain failure, in the
  // transaction that applied the unit's other parts.
  virtual Status Charge(pg::Connection& conn, const std::string& schema,
                        const Failure& failure) = 0;
  // A unit of the transform succeeded: clears what the hook charged, once
  // the transform has no unit waiting for a retry.
  virtual Status Settled(pg::Connection& conn, const std::string& schema, int transform_id) = 0;
  // `unit` of `t` completed, in this transaction: what it recomputed may
  // free earlier charges (its QuarantinedKeys). Returns an error only for a
  // transient failure, after which the transaction must roll back.
  virtual Status Recomputed(pg::Connection&, const std::string&, const catalog::Transform&,
                            const Unit&) {
    return Status::OK();
  }
};

// Charges nothing to columns or keys: every failure is a drain failure.
class DrainFailureRecorder : public ChargingHook {
 public:
  Result<std::vector<const Unit*>> ChargeParts(pg::Connection&, const std::string&,
                                               const catalog::Transform&,
                                               const std::vector<const Unit*>& failed,
                                               const Status&) override {
    return failed;
  }
  Status Charge(pg::Connection& conn, const std::string& schema, const Failure& failure) override;
  Status Settled(pg::Connection& conn, const std::string& schema, int transform_id) override;
};

// The policy the workers use: quarantined columns, then held keys, then a
// drain failure for what is left; a quarantined key a unit recomputed is
// computed again (quarantine.h, HealQuarantinedKeys).
class FailureCharger final : public DrainFailureRecorder {
 public:
  Result<std::vector<const Unit*>> ChargeParts(pg::Connection& conn, const std::string& schema,
                                               const catalog::Transform& t,
                                               const std::vector<const Unit*>& failed,
                                               const Status& error) override;
  Status Recomputed(pg::Connection& conn, const std::string& schema, const catalog::Transform& t,
                    const Unit& unit) override;
};

// The policy the workers use.
std::unique_ptr<ChargingHook> MakeChargingHook();

// The SQL condition, over a transforms row aliased `t`, that the transform
// is waiting for a retry of its serial build work after a failure: build
// and rebuild claims skip it until then, so one failing transform never
// holds up another's build.
std::string BuildRetryPending(const std::string& schema);

}  // namespace trellis::drain
