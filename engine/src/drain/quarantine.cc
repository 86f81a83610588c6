#include "drain/quarantine.h"

#include <map>
#include <optional>
#include <set>

#include "catalog/address.h"
#include "catalog/states.h"
#include "drain/failure_class.h"
#include "drain/page_unit.h"
#include "grammar/address.h"
#include "grammar/render.h"
#include "log/component_log.h"
#include "plan/bind.h"
#include "plan/quarantine_sql.h"
#include "sql/quote.h"
#include "trellis/charging_metrics.h"

namespace trellis::drain {
namespace {

constexpr const char* kTrial = "trellis_charge";

// Column name -> the error charged to it.
using Charges = std::map<std::string, Status>;

Status Exec(pg::Connection& conn, const std::string& sql) { return conn.Exec(sql); }

// Closes a trial that wrote: keeps it, or undoes it.
Status EndTrial(pg::Connection& conn, bool keep) {
  if (!keep) TRELLIS_RETURN_IF_ERROR(Exec(conn, std::string("ROLLBACK TO SAVEPOINT ") + kTrial));
  return Exec(conn, std::string("RELEASE SAVEPOINT ") + kTrial);
}

Status Record(pg::Connection& conn, const std::string& schema, int transform_id,
              const FailingKey& key, const Charges& charges) {
  std::vector<std::string> columns;
  std::vector<std::string> sqlstates;
  std::vector<std::string> errors;
  for (const auto& [column, error] : charges) {
    columns.push_back(column);
    sqlstates.push_back(error.sqlstate.value_or(""));
    errors.push_back(error.message());
  }
  return conn.Exec(sql::WithSchema(R"sql(
INSERT INTO {schema}.quarantined_rows AS q
  (transform_id, column_name, key, input_values, sqlstate, error)
SELECT $1::int, u.c, $2::text[], $3::jsonb, nullif(u.s, ''), u.e
FROM unnest($4::text[], $5::text[], $6::text[]) AS u(c, s, e)
ON CONFLICT (transform_id, column_name, key) DO UPDATE SET
  input_values = EXCLUDED.input_values, sqlstate = EXCLUDED.sqlstate, error = EXCLUDED.error)sql",
                                   schema),
                   {std::to_string(transform_id), key.key, key.inputs, sql::ArrayLiteral(columns),
                    sql::ArrayLiteral(sqlstates), sql::ArrayLiteral(errors)});
}

// `t` as a plan sees it with `columns` in quarantine.
catalog::Transform WithQuarantined(const catalog::Transform& t,
                                   const std::set<std::string>& columns) {
  catalog::Transform copy = t;
  for (auto& c : copy.columns) {
    if (!columns.count(c.name) || c.state != ColumnState::kLive) continue;
    c.state = ColumnState::kPaused;
    c.paused_kind = PauseKind::kQuarantine;
  }
  return copy;
}

// Writes `part` with the columns of `charges` (and `already`) in quarantine
// for the key, under a savepoint. True: written, the savepoint left for
// EndTrial. False: a failure, rolled back, in `failure`. An error: a
// transient failure, after which the transaction must roll back.
Result<bool> Try(pg::Connection& conn, const std::string& schema, const catalog::Transform& t,
                 const Unit& part, const FailingKey& key, const std::set<std::string>& already,
                 const Charges& charges, Status& failure) {
  TRELLIS_RETURN_IF_ERROR(Exec(conn, std::string("SAVEPOINT ") + kTrial));
  std::set<std::string> columns = already;
  for (const auto& [column, error] : charges) columns.insert(column);
  auto applied = [&]() -> Result<long> {
    TRELLIS_RETURN_IF_ERROR(Record(conn, schema, t.id, key, charges));
    auto bound = plan::Bind(WithQuarantined(t, columns), schema);
    if (!bound.ok()) return bound.status();
    auto unit = part.Rebound(*bound.value());
    if (!unit) return Status::Internal("a unit that cannot be rebound was charged to columns");
    return unit->Apply(conn);
  }();
  if (applied.ok()) return true;
  if (Classify(applied.status()) == FailureClass::kTransient) return applied.status();
  failure = applied.status();
  TRELLIS_RETURN_IF_ERROR(EndTrial(conn, /*keep=*/false));
  return false;
}

// The columns of `t` already in quarantine for `key`.
Result<std::set<std::string>> QuarantinedFor(pg::Connection& conn, const std::string& schema,
                                             int transform_id, const std::string& key) {
  auto rows = conn.Query(sql::WithSchema("SELECT column_name FROM {schema}.quarantined_rows "
                                         "WHERE transform_id = $1::int AND key = $2::text[]",
                                         schema),
                         {std::to_string(transform_id), key});
  if (!rows.ok()) return rows.status();
  std::set<std::string> out;
  for (size_t r = 0; r < rows->size(); ++r) out.insert(rows->text(r, 0));
  return out;
}

Status PauseCharged(pg::Connection& conn, const std::string& schema, const catalog::Transform& t,
                    const FailingKey& key, const Charges& charges,
                    const std::set<std::string>& known) {
  static const auto logger = log::Component("trellis::drain");
  const std::string name = grammar::RenderTransformName(t.name());
  std::optional<catalog::LogName> logged;  // looked up once, and only to log
  for (const auto& [column, error] : charges) {
    const std::string address = name + "." + grammar::RenderName(column);
    if (!known.count(column)) {
      ChargingMetrics::Get().RowQuarantined(t.name());
      // Named as the user knows it: a hidden stage's column is reached by
      // its owner's address (catalog::ResolveStageColumn).
      if (!logged) logged = catalog::LogNameOf(conn, schema, t);
      const std::string shown = logged->address + "." + grammar::RenderName(column);
      // The error's text may quote a row value: only its code at warning.
      logger->warn(
          "transform {} column {}: its value fails for key {} ({}); the row's other values are "
          "written and this one is NULL. Read the failing rows with "
          "Trellis.sample_quarantined(handle, \"{}\"); a write that fixes or deletes a row brings "
          "its value back (after a fix that is no write, RESUME TRANSFORM {} rebuilds the column)",
          logged->label, grammar::RenderName(column), key.key, log::SafeForLog(error), shown,
          shown);
      logger->debug("transform {} column {} key {}: {}", logged->label, column, key.key,
                    error.message());
    }
    auto paused = catalog::QuarantineColumn(
        conn, schema, t.id, column,
        "its value fails for some rows (the first: key " + key.key + ", " + error.message() +
            "); those rows hold NULL in it and are listed by Trellis.sample_quarantined/3 on \"" +
            address +
            "\"; every other value keeps flowing. A write that fixes or deletes a row brings its "
            "value back, and the column is live again once no row fails; after a fix that is no "
            "write (the definition, or a function it calls), RESUME TRANSFORM " +
            address + " rebuilds the column");
    if (!paused.ok()) return paused.status();
    if (paused.value()) ChargingMetrics::Get().ColumnQuarantined(t.name());
  }
  return Status::OK();
}

}  // namespace

Result<FailingKey> ReadFailingKey(pg::Connection& conn, const plan::TransformPlan& plan,
                                  const std::string& key) {
  const std::string sql = plan.KeyInputsSql();
  if (sql.empty()) return FailingKey{key, std::nullopt};
  auto rows = conn.Query(sql, {key});
  if (!rows.ok()) return rows.status();
  if (rows->empty()) return FailingKey{key, std::nullopt};  // the source row is gone
  return FailingKey{rows->text(0, 0), rows->at(0, 1)};
}

Result<std::optional<std::vector<std::string>>> ChargeToColumns(
    pg::Connection& conn, const std::string& schema, const catalog::Transform& t, const Unit& part,
    const FailingKey& key, const Status& error, Status& refusal,
    const std::set<std::string>& known) {
  using Charged = std::optional<std::vector<std::string>>;
  auto already = QuarantinedFor(conn, schema, t.id, key.key);
  if (!already.ok()) return already.status();
  Charges all;
  for (const auto& c : t.columns) {
    if (c.role == catalog::ColumnRole::kHidden || !plan::IsWritten(c)) continue;
    if (!already->count(c.name)) all.emplace(c.name, error);
  }
  if (all.empty()) return Charged();
  // With every column in quarantine for the key, does the row write? If not,
  // the failure is the row's (its WHERE, the target refusing it): no column
  // is charged.
  Status failure;
  auto wrote = Try(conn, schema, t, part, key, already.value(), all, failure);
  if (!wrote.ok()) return wrote.status();
  if (!wrote.value()) return Charged();
  TRELLIS_RETURN_IF_ERROR(EndTrial(conn, /*keep=*/false));
  // The fewest columns: each is dropped from the charge when the row still
  // writes without it; one that cannot be dropped is charged with the error
  // the row then failed with.
  Charges charged = all;
  if (all.size() > 1) {
    for (const auto& [column, unused] : all) {
      Charges without = charged;
      without.erase(column);
      auto ok = Try(conn, schema, t, part, key, already.value(), without, failure);
      if (!ok.ok()) return ok.status();
      if (ok.value()) {
        TRELLIS_RETURN_IF_ERROR(EndTrial(conn, /*keep=*/false));
        charged = std::move(without);
      } else if (IsTargetRefusal(failure)) {
        // The target refuses the row with this value: the row's failure.
        refusal = failure;
        return Charged();
      } else {
        charged[column] = failure;
      }
    }
  }
  auto kept = Try(conn, schema, t, part, key, already.value(), charged, failure);
  if (!kept.ok()) return kept.status();
  if (!kept.value()) return Charged();
  TRELLIS_RETURN_IF_ERROR(EndTrial(conn, /*keep=*/true));
  TRELLIS_RETURN_IF_ERROR(PauseCharged(conn, schema, t, key, charged, known));
  std::vector<std::string> columns;
  for (const auto& [column, unused] : charged) columns.push_back(column);
  return Charged(std::move(columns));
}

}  // namespace trellis::drain

namespace trellis::drain {
namespace {

constexpr const char* kHeal = "trellis_heal";

// Deletes the records of `key`; returns each column's name and since.
Result<std::map<std::string, std::string>> TakeRecords(pg::Connection& conn,
                                                       const std::string& schema, int transform_id,
                                                       const std::string& key) {
  auto rows = conn.Query(sql::WithSchema("DELETE FROM {schema}.quarantined_rows WHERE transform_id "
                                         "= $1::int AND key = $2::text[] RETURNING column_name, "
                                         "since::text",
                                         schema),
                         {std::to_string(transform_id), key});
  if (!rows.ok()) return rows.status();
  std::map<std::string, std::string> out;
  for (size_t r = 0; r < rows->size(); ++r) out.emplace(rows->text(r, 0), rows->text(r, 1));
  return out;
}

// Gives the records of `key` charged again the time they were first made.
Status KeepSince(pg::Connection& conn, const std::string& schema, int transform_id,
                 const std::string& key, const std::map<std::string, std::string>& since) {
  std::vector<std::string> columns;
  std::vector<std::string> times;
  for (const auto& [column, at] : since) {
    columns.push_back(column);
    times.push_back(at);
  }
  return conn.Exec(
      sql::WithSchema(R"sql(
UPDATE {schema}.quarantined_rows q SET since = o.since::timestamptz
FROM unnest($3::text[], $4::text[]) AS o(c, since)
WHERE q.transform_id = $1::int AND q.key = $2::text[] AND q.column_name = o.c)sql",
                      schema),
      {std::to_string(transform_id), key, sql::ArrayLiteral(columns), sql::ArrayLiteral(times)});
}

// Computes `key` again with nothing in quarantine for it, under a savepoint.
// Returns the columns that left its quarantine.
Result<std::set<std::string>> HealKey(pg::Connection& conn, const std::string& schema,
                                      const catalog::Transform& t, const plan::TransformPlan& plan,
                                      const std::string& key) {
  TRELLIS_RETURN_IF_ERROR(Exec(conn, std::string("SAVEPOINT ") + kHeal));
  auto release = [&]() { return Exec(conn, std::string("RELEASE SAVEPOINT ") + kHeal); };
  auto undo = [&]() { return Exec(conn, std::string("ROLLBACK TO SAVEPOINT ") + kHeal); };
  auto old = TakeRecords(conn, schema, t.id, key);
  if (!old.ok()) return old.status();
  std::set<std::string> was;
  for (const auto& [column, unused] : old.value()) was.insert(column);
  KeysUnit unit(plan, {key});
  auto applied = unit.Apply(conn);
  if (applied.ok()) {
    TRELLIS_RETURN_IF_ERROR(release());
    return was;
  }
  if (Classify(applied.status()) == FailureClass::kTransient) return applied.status();
  // Still failing: charged afresh, to the columns that fail now.
  TRELLIS_RETURN_IF_ERROR(undo());
  auto again = TakeRecords(conn, schema, t.id, key);
  if (!again.ok()) return again.status();
  auto failing = ReadFailingKey(conn, plan, key);
  if (!failing.ok()) return failing.status();
  Status refusal;
  auto charged =
      ChargeToColumns(conn, schema, t, unit, failing.value(), applied.status(), refusal, was);
  if (!charged.ok()) return charged.status();
  if (!charged.value()) {
    // No column explains it now (the row itself fails): left as it was,
    // for the drain's own charging to settle on the key's next write.
    TRELLIS_RETURN_IF_ERROR(undo());
    TRELLIS_RETURN_IF_ERROR(release());
    return std::set<std::string>();
  }
  TRELLIS_RETURN_IF_ERROR(KeepSince(conn, schema, t.id, failing->key, old.value()));
  TRELLIS_RETURN_IF_ERROR(release());
  for (const auto& column : *charged.value()) was.erase(column);
  return was;
}

}  // namespace

Status HealQuarantinedKeys(pg::Connection& conn, const std::string& schema,
                           const catalog::Transform& t, const std::vector<std::string>& keys) {
  if (keys.empty()) return Status::OK();
  static const auto logger = log::Component("trellis::drain");
  auto bound = plan::Bind(t, schema);
  if (!bound.ok()) return bound.status();
  std::optional<catalog::LogName> logged;  // looked up once, and only to log
  std::set<std::string> healed;
  for (const std::string& key : keys) {
    auto columns = HealKey(conn, schema, t, *bound.value(), key);
    if (!columns.ok()) return columns.status();
    for (const auto& column : columns.value()) {
      if (!logged) logged = catalog::LogNameOf(conn, schema, t);
      logger->info("transform {} column {}: key {} computes again; its value is written",
                   logged->label, grammar::RenderName(column), key);
      healed.insert(column);
    }
  }
  for (const auto& column : healed) {
    auto lifted = catalog::LiftQuarantine(conn, schema, t.id, column);
    if (!lifted.ok()) return lifted.status();
    if (!lifted.value()) continue;
    logger->warn(
        "transform {} column {}: no row fails any more (the last ones were fixed or deleted); "
        "the column is live again",
        logged ? logged->label : catalog::LogNameOf(conn, schema, t).label,
        grammar::RenderName(column));
  }
  return Status::OK();
}

}  // namespace trellis::drain
