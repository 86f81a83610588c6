#include "drain/charging.h"

#include "log/component_log.h"
#include "sql/quote.h"

namespace trellis::drain {
namespace {

// At most this many failing parts are recorded: the record says where to
// look, it is not a list of every bad row.
constexpr size_t kMaxPartsRecorded = 20;

}  // namespace

Status DrainFailureRecorder::Charge(pg::Connection& conn, const std::string& schema,
                                    const Failure& failure) {
  static const auto logger = log::Component("trellis::drain");
  // The host names the instance; the message itself only at debug level,
  // where a data error's quoted row value may appear.
  logger->warn("{} of transform {} failed ({}), retried with backoff: {}", failure.unit_kind,
               failure.transform_name, FailureClassName(failure.failure_class),
               log::SafeForLog(failure.error));
  logger->debug("{} of transform {} failed at {}: {}", failure.unit_kind, failure.transform_name,
                failure.parts.empty() ? std::string() : failure.parts.front(),
                failure.error.message());
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

std::unique_ptr<ChargingHook> MakeChargingHook() {
  return std::make_unique<DrainFailureRecorder>();
}

std::string BuildRetryPending(const std::string& schema) {
  return sql::WithSchema(
      "EXISTS (SELECT 1 FROM {schema}.drain_failures f WHERE f.transform_id = t.id "
      "AND f.unit_kind IN ('rebuild', 'add_key') AND f.retry_at > now())",
      schema);
}

}  // namespace trellis::drain
