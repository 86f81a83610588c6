// The one unit executor: every unit of work on a target (drain pages, the
// key ranges of builds, self-check ranges) runs through Run(),
// which owns the savepoints and the one failure classifier
// (failure_class.h):
//   schema change -> the transform is paused (kind schema_change);
//   data error    -> narrowed by bisection under savepoints to the keys
//                    that fail, the rest applied, the failing parts charged
//                    (charging.h) to columns in quarantine or held keys,
//                    and the unit completed; what cannot be charged so is a
//                    drain failure, left for a retry with backoff;
//   transient     -> returned as an error: the caller's transaction rolls
//                    back and the unit is retried as it is;
//   other         -> charged as it is, without narrowing, and retried with
//                    backoff.
// No other code in the engine handles a unit's failure.
#pragma once

#include <string>

#include "catalog/model.h"
#include "drain/charging.h"
#include "drain/unit.h"
#include "pg/connection.h"
#include "trellis/status.h"

namespace trellis::drain {

enum class UnitOutcome {
  kApplied,  // every part was applied, or charged to columns or held keys
  kCharged,  // some parts failed and were charged; the others were applied
  kPaused,   // a schema change paused the transform; nothing was applied
  // A schema change, and the unit asked to pause in a transaction of its
  // own (PauseOutside()): the caller rolls back, then calls PauseAlone().
  kPauseAlone,
};

struct UnitResult {
  UnitOutcome outcome = UnitOutcome::kApplied;
  long rows = 0;
  Status error;  // the failure, unless kApplied with nothing charged
  // kApplied: parts that failed and were charged to columns or held keys.
  size_t charged = 0;
};

struct RunOptions {
  // The unit redoes work that failed before: clear the transform's charge
  // once it succeeds (ChargingHook::Settled).
  bool retrying = false;
  // Pausing must not happen in the unit's transaction (it holds the
  // transform's row shared with other units): return kPauseAlone.
  bool pause_alone = false;
};

class UnitExecutor {
 public:
  explicit UnitExecutor(ChargingHook& charging) : charging_(charging) {}

  // Runs `unit` of transform `t` in the caller's transaction.
  // REQUIRES: inside a transaction. A transient failure is returned as an
  // error, after which the transaction must be rolled back.
  Result<UnitResult> Run(pg::Connection& conn, const std::string& schema,
                         const catalog::Transform& t, Unit& unit, RunOptions options = {});

  // Pauses `t` for the schema change `error`, in a transaction of its own.
  // REQUIRES: outside a transaction.
  Status PauseAlone(pg::Connection& conn, const std::string& schema, const catalog::Transform& t,
                    const Status& error);

 private:
  // Applies `unit` part by part, collecting the parts that fail with a data
  // error in `failed`. Returns the rows written, or the first failure of
  // another class.
  Result<long> Narrow(pg::Connection& conn, Unit& unit, std::vector<std::unique_ptr<Unit>>& parts,
                      std::vector<const Unit*>& failed, Status& first_error);

  ChargingHook& charging_;
};

}  // namespace trellis::drain
