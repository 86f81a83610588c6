#include "drain/charging.h"

#include "catalog/address.h"
#include "drain/held_keys.h"
#include "drain/quarantine.h"
#include "log/component_log.h"
#include "plan/bind.h"
#include "sql/quote.h"
#include "trellis/charging_metrics.h"

namespace trellis::drain {
namespace {

// At most this many failing parts are recorded: the record says where to
// look, it is not a list of every bad row.
constexpr size_t kMaxPartsRecorded = 20;

// Applies `unit` under a savepoint of its own: true when it wrote, false
// (rolled back, the failure in `failure`) when it failed; an error for a
// transient failure, after which the transaction must roll back.
Result<bool> ApplyAlone(pg::Connection& conn, Unit& unit, Status* failure = nullptr) {
  TRELLIS_RETURN_IF_ERROR(conn.Exec("SAVEPOINT trellis_hold"));
  auto applied = unit.Apply(conn);
  if (!applied.ok()) {
    if (Classify(applied.status()) == FailureClass::kTransient) return applied.status();
    TRELLIS_RETURN_IF_ERROR(conn.Exec("ROLLBACK TO SAVEPOINT trellis_hold"));
    if (failure) *failure = applied.status();
  }
  TRELLIS_RETURN_IF_ERROR(conn.Exec("RELEASE SAVEPOINT trellis_hold"));
  return applied.ok();
}

}  // namespace

Status DrainFailureRecorder::Charge(pg::Connection& conn, const std::string& schema,
                                    const Failure& failure) {
  static const auto logger = log::Component("trellis::drain");
  // The host names the instance; the message itself only at debug level,
  // where a data error's quoted row value may appear.
  // Named as the user knows it: a hidden stage's failure is its owner's.
  const catalog::LogName name =
      catalog::LogNameOf(conn, schema, failure.transform_id, failure.transform_name);
  logger->warn("{} of transform {} failed ({}), retried with backoff: {}", failure.unit_kind,
               name.label, FailureClassName(failure.failure_class), log::SafeForLog(failure.error));
  logger->debug("{} of transform {} failed at {}: {}", failure.unit_kind, name.label,
                failure.parts.empty() ? std::string() : failure.parts.front(),
                failure.error.message());
  ChargingMetrics::Get().DrainFailed(failure.transform_name);
  std::vector<std::string> parts(
      failure.parts.begin(),
      failure.parts.begin() + static_cast<long>(std::min(failure.parts.size(), kMaxPartsRecorded)));
  return conn.Exec(sql::WithSchema(R"sql(
INSERT INTO {schema}.drain_failures AS f
  (transform_id, unit_kind, failure_class, sqlstate, message, parts, retry_at)
VALUES ($1::int, $2, $3, $4, $5, $6::text[], now() + interval '100 milliseconds')
ON CONFLICT (transform_id) DO UPDATE SET
  unit_kind = EXCLUDED.unit_kind, failure_class = EXCLUDED.failure_class,
  sqlstate = EXCLUDED.sqlstate, message = EXCLUDED.message, parts = EXCLUDED.parts,
  attempts = f.attempts + 1, last_at = now(),
  retry_at = now() + least(interval '60 seconds',
                           interval '100 milliseconds' * power(2, f.attempts)))sql",
                                   schema),
                   {std::to_string(failure.transform_id), failure.unit_kind,
                    std::string(FailureClassName(failure.failure_class)), failure.error.sqlstate,
                    failure.error.message(), sql::ArrayLiteral(parts)});
}

Status DrainFailureRecorder::Settled(pg::Connection& conn, const std::string& schema,
                                     int transform_id) {
  // Cleared once nothing of the transform waits for a retry: a success of
  // one unit says nothing about another that still fails.
  return conn.Exec(sql::WithSchema(R"sql(
DELETE FROM {schema}.drain_failures f WHERE f.transform_id = $1::int
  AND NOT EXISTS (SELECT 1 FROM {schema}.pages p WHERE p.transform_id = $1::int AND p.attempts > 0)
  AND NOT EXISTS (SELECT 1 FROM {schema}.jobs j WHERE j.transform_id = $1::int AND j.attempts > 0))sql",
                                   schema),
                   {std::to_string(transform_id)});
}

Result<std::vector<const Unit*>> FailureCharger::ChargeParts(pg::Connection& conn,
                                                             const std::string& schema,
                                                             const catalog::Transform& t,
                                                             const std::vector<const Unit*>& failed,
                                                             const Status& /*first_error*/) {
  // Each part is charged with its own error, found by applying it alone.
  auto bound = plan::Bind(t, schema);
  if (!bound.ok()) return bound.status();
  const plan::TransformPlan& plan = *bound.value();
  std::vector<const Unit*> left;
  for (const Unit* part : failed) {
    // Only a part that writes a key can be charged to it (a self-check
    // range writes nothing; a whole-target statement has no key).
    if (!part->Rebound(plan)) {
      left.push_back(part);
      continue;
    }
    auto key = part->OneKey(conn);
    if (!key.ok()) return key.status();
    if (!key.value()) {
      // Its key was deleted since it failed: the part writes now (or fails
      // for another reason, charged to nothing).
      auto again = ApplyAlone(conn, *part->Rebound(plan));
      if (!again.ok()) return again.status();
      if (!again.value()) left.push_back(part);
      continue;
    }
    // Once more as it is, for the part's own error (the first part's may
    // not be this one's).
    Status own;
    auto wrote = ApplyAlone(conn, *part->Rebound(plan), &own);
    if (!wrote.ok()) return wrote.status();
    // It writes now (its cause was fixed meanwhile): nothing to charge.
    if (wrote.value()) continue;
    auto failing = ReadFailingKey(conn, plan, *key.value());
    if (!failing.ok()) return failing.status();
    // The target refusing the row is never a column's failure: the key is
    // held, its row left as it was.
    if (!IsTargetRefusal(own)) {
      Status refusal;
      auto columns = ChargeToColumns(conn, schema, t, *part, failing.value(), own, refusal);
      if (!columns.ok()) return columns.status();
      if (columns.value()) continue;
      if (!refusal.ok()) own = refusal;
    }
    TRELLIS_RETURN_IF_ERROR(HoldKey(conn, schema, t, failing->key, own));
  }
  return left;
}

Status FailureCharger::Recomputed(pg::Connection& conn, const std::string& schema,
                                  const catalog::Transform& t, const Unit& unit) {
  return HealQuarantinedKeys(conn, schema, t, unit.QuarantinedKeys());
}

std::unique_ptr<ChargingHook> MakeChargingHook() { return std::make_unique<FailureCharger>(); }

std::string BuildRetryPending(const std::string& schema) {
  return sql::WithSchema(
      "EXISTS (SELECT 1 FROM {schema}.drain_failures f WHERE f.transform_id = t.id "
      "AND f.unit_kind IN ('rebuild', 'add_key') AND f.retry_at > now())",
      schema);
}

}  // namespace trellis::drain
