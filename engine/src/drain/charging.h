// The charging seam: where a unit's failure that retrying alone will not
// cure is charged. The executor hands every data error (narrowed to the
// keys that fail) and every unclassified failure to a ChargingHook; what
// the hook does is the failure-charging policy. This build's policy
// (DrainFailureRecorder) records a drain failure the status shows (the
// transform, since when, attempts, the error and its SQLSTATE) and leaves
// the unit for a retry with backoff. The quarantine and held-key policy
// (issue 13) is another ChargingHook, returned by MakeChargingHook().
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "drain/failure_class.h"
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
  // Charges `failure`, in the transaction that applied the unit's other parts.
  virtual Status Charge(pg::Connection& conn, const std::string& schema,
                        const Failure& failure) = 0;
  // A unit of the transform succeeded: clears what the hook charged, once
  // the transform has no unit waiting for a retry.
  virtual Status Settled(pg::Connection& conn, const std::string& schema, int transform_id) = 0;
};

// Records drain failures (see above).
class DrainFailureRecorder final : public ChargingHook {
 public:
  Status Charge(pg::Connection& conn, const std::string& schema, const Failure& failure) override;
  Status Settled(pg::Connection& conn, const std::string& schema, int transform_id) override;
};

// The policy the workers use.
std::unique_ptr<ChargingHook> MakeChargingHook();

// The SQL condition, over a transforms row aliased `t`, that the transform
// is waiting for a retry of its serial build work after a failure: build
// and rebuild claims skip it until then, so one failing transform never
// holds up another's build.
std::string BuildRetryPending(const std::string& schema);

}  // namespace trellis::drain
