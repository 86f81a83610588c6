#include "drain/unit_executor.h"

#include "drain/schema_change.h"

namespace trellis::drain {
namespace {

constexpr const char* kSavepoint = "trellis_unit";

// Runs `unit` under a savepoint: on failure the savepoint is rolled back, so
// the transaction stays usable for the next part. The parts of a narrowing
// release theirs (`release`), so a long bisection does not pile up
// subtransactions; the whole unit's is left to the commit, which saves the
// drain's hot path a round trip.
Result<long> ApplyUnderSavepoint(pg::Connection& conn, Unit& unit, bool release) {
  TRELLIS_RETURN_IF_ERROR(conn.Exec(std::string("SAVEPOINT ") + kSavepoint));
  auto applied = unit.Apply(conn);
  if (!applied.ok()) {
    if (Classify(applied.status()) == FailureClass::kTransient) return applied.status();
    TRELLIS_RETURN_IF_ERROR(conn.Exec(std::string("ROLLBACK TO SAVEPOINT ") + kSavepoint));
  }
  if (release) TRELLIS_RETURN_IF_ERROR(conn.Exec(std::string("RELEASE SAVEPOINT ") + kSavepoint));
  return applied;
}

}  // namespace

Result<long> UnitExecutor::Narrow(pg::Connection& conn, Unit& unit,
                                  std::vector<std::unique_ptr<Unit>>& parts,
                                  std::vector<const Unit*>& failed, Status& first_error) {
  auto halves = unit.Split(conn);
  if (!halves.ok()) return halves.status();
  if (halves->empty()) {  // one key: this is a failing part
    failed.push_back(&unit);
    return 0L;
  }
  long rows = 0;
  for (auto& half : halves.value()) {
    Unit& part = *half;
    parts.push_back(std::move(half));
    auto applied = ApplyUnderSavepoint(conn, part, /*release=*/true);
    if (applied.ok()) {
      rows += applied.value();
      continue;
    }
    if (Classify(applied.status()) != FailureClass::kDataError) return applied.status();
    if (first_error.ok()) first_error = applied.status();
    auto narrowed = Narrow(conn, part, parts, failed, first_error);
    if (!narrowed.ok()) return narrowed.status();
    rows += narrowed.value();
  }
  return rows;
}

Result<UnitResult> UnitExecutor::Run(pg::Connection& conn, const std::string& schema,
                                     const catalog::Transform& t, Unit& unit, RunOptions options) {
  auto applied = ApplyUnderSavepoint(conn, unit, /*release=*/false);
  if (applied.ok()) {
    TRELLIS_RETURN_IF_ERROR(unit.Complete(conn));
    TRELLIS_RETURN_IF_ERROR(charging_.Recomputed(conn, schema, t, unit));
    if (options.retrying) TRELLIS_RETURN_IF_ERROR(charging_.Settled(conn, schema, t.id));
    return UnitResult{UnitOutcome::kApplied, applied.value(), Status::OK(), 0};
  }
  Status error = applied.status();
  FailureClass failure_class = Classify(error);
  std::vector<std::unique_ptr<Unit>> parts;
  std::vector<const Unit*> failed;
  long rows = 0;
  if (failure_class == FailureClass::kDataError) {
    Status first_error = error;
    auto narrowed = Narrow(conn, unit, parts, failed, first_error);
    if (!narrowed.ok()) {
      error = narrowed.status();
      failure_class = Classify(error);  // a part met another kind of failure
    } else {
      rows = narrowed.value();
      error = first_error;
    }
  }
  switch (failure_class) {
    case FailureClass::kTransient:
      return error;
    case FailureClass::kSchemaChange:
      // Nothing of the unit is kept: the transform is rebuilt on RESUME.
      if (!parts.empty()) {
        // Parts were applied under released savepoints: the caller must roll
        // back. Pausing alone does that.
        return UnitResult{UnitOutcome::kPauseAlone, 0, error};
      }
      if (options.pause_alone) return UnitResult{UnitOutcome::kPauseAlone, 0, error};
      TRELLIS_RETURN_IF_ERROR(PauseForSchemaChange(conn, schema, t, error));
      return UnitResult{UnitOutcome::kPaused, 0, error};
    case FailureClass::kDataError:
    case FailureClass::kOther:
      break;
  }
  if (failure_class == FailureClass::kDataError && failed.empty()) {
    // Every part wrote when applied alone: what failed the whole unit
    // changed meanwhile (a concurrent write fixed or deleted the row). The
    // parts were all applied, so the unit's work is done.
    TRELLIS_RETURN_IF_ERROR(unit.Complete(conn));
    TRELLIS_RETURN_IF_ERROR(charging_.Recomputed(conn, schema, t, unit));
    if (options.retrying) TRELLIS_RETURN_IF_ERROR(charging_.Settled(conn, schema, t.id));
    return UnitResult{UnitOutcome::kApplied, rows, Status::OK(), 0};
  }
  if (failure_class == FailureClass::kDataError) {
    auto left = charging_.ChargeParts(conn, schema, t, failed, error);
    if (!left.ok()) return left.status();
    if (left->empty()) {
      // Every failing part was charged to columns or its key: the unit's
      // work is done.
      TRELLIS_RETURN_IF_ERROR(unit.Complete(conn));
      TRELLIS_RETURN_IF_ERROR(charging_.Recomputed(conn, schema, t, unit));
      if (options.retrying) TRELLIS_RETURN_IF_ERROR(charging_.Settled(conn, schema, t.id));
      return UnitResult{UnitOutcome::kApplied, rows, error, failed.size()};
    }
    failed = std::move(left.value());
  }
  if (failed.empty()) failed.push_back(&unit);  // not narrowed: the whole unit
  Failure failure{t.id, t.name(), std::string(unit.kind()), failure_class, error, {}};
  for (const Unit* part : failed) failure.parts.push_back(part->Describe());
  TRELLIS_RETURN_IF_ERROR(unit.Defer(conn, failed, error));
  TRELLIS_RETURN_IF_ERROR(charging_.Charge(conn, schema, failure));
  return UnitResult{UnitOutcome::kCharged, rows, error, 0};
}

Status UnitExecutor::PauseAlone(pg::Connection& conn, const std::string& schema,
                                const catalog::Transform& t, const Status& error) {
  auto tx = pg::Transaction::Begin(conn);
  if (!tx.ok()) return tx.status();
  TRELLIS_RETURN_IF_ERROR(PauseForSchemaChange(conn, schema, t, error));
  return tx.value()->Commit();
}

}  // namespace trellis::drain
