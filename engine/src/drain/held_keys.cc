#include "drain/held_keys.h"

#include "catalog/address.h"
#include "catalog/states.h"
#include "grammar/address.h"
#include "grammar/render.h"
#include "log/component_log.h"
#include "sql/quote.h"
#include "trellis/charging_metrics.h"

namespace trellis::drain {

Status HoldKey(pg::Connection& conn, const std::string& schema, const catalog::Transform& t,
               const std::string& key, const Status& error) {
  static const auto logger = log::Component("trellis::drain");
  auto held = conn.Query(
      sql::WithSchema(R"sql(
WITH held AS (
  INSERT INTO {schema}.held_keys AS h (transform_id, key, sqlstate, error)
  VALUES ($1::int, $2::text[], $3, $4)
  ON CONFLICT (transform_id, key) DO UPDATE SET
    sqlstate = EXCLUDED.sqlstate, error = EXCLUDED.error, attempts = h.attempts + 1,
    last_failed_at = now()
  RETURNING attempts
)
SELECT (SELECT attempts FROM held),
       (SELECT count(*) FROM (SELECT 1 FROM {schema}.held_keys WHERE transform_id = $1::int
                              LIMIT $5::int) k))sql",
                      schema),
      {std::to_string(t.id), key, error.sqlstate, error.message(), std::to_string(kMaxHeldKeys)});
  if (!held.ok()) return held.status();
  if (held->text(0, 0) == "1") ChargingMetrics::Get().KeyHeld(t.name());
  // Named as the user knows it: a hidden stage's key is released by its
  // owner's name (Session::ReleaseKey).
  const catalog::LogName logged = catalog::LogNameOf(conn, schema, t);
  const std::string& name = logged.address;
  // The error's text may quote a row value: only its code at warning level.
  logger->warn(
      "transform {} holds key {}: its row cannot be written ({}); the target row stays as it "
      "was. Fix the cause, then Trellis.release_key(handle, \"{}\", key) recomputes it",
      logged.label, key, log::SafeForLog(error), name);
  logger->debug("transform {} key {} is held: {}", logged.label, key, error.message());
  // The first count includes the new hold, which another transaction may
  // not see yet; a few holds over the bound do not matter.
  if (std::stol(held->text(0, 1)) < kMaxHeldKeys) return Status::OK();
  logger->warn(
      "transform {} holds {} keys: its definition or target fails for most rows; it is "
      "paused (kind failure) until RESUME TRANSFORM {}",
      logged.label, kMaxHeldKeys, name);
  return catalog::Pause(conn, schema, t.id, PauseKind::kFailure,
                        "it holds " + std::to_string(kMaxHeldKeys) +
                            " keys whose rows cannot be written (the last: " + key + ", " +
                            error.message() + "); fix the cause, then RESUME TRANSFORM " + name +
                            " rebuilds it");
}

Result<bool> IsHeld(pg::Connection& conn, const std::string& schema, int transform_id,
                    const std::string& key) {
  auto rows = conn.Query(
      sql::WithSchema(
          "SELECT 1 FROM {schema}.held_keys WHERE transform_id = $1::int AND key = $2::text[]",
          schema),
      {std::to_string(transform_id), key});
  if (!rows.ok()) return rows.status();
  return !rows->empty();
}

Result<bool> DropHold(pg::Connection& conn, const std::string& schema, int transform_id,
                      const std::string& key) {
  auto rows = conn.Query(sql::WithSchema("DELETE FROM {schema}.held_keys WHERE transform_id = "
                                         "$1::int AND key = $2::text[] RETURNING 1",
                                         schema),
                         {std::to_string(transform_id), key});
  if (!rows.ok()) return rows.status();
  return !rows->empty();
}

}  // namespace trellis::drain
