#include "drain/page_unit.h"

#include "catalog/states.h"
#include "sql/key_text.h"
#include "sql/quote.h"
#include "sql/row_reader.h"

namespace trellis::drain {
namespace {

// (written, deleted) of a recompute, as the rows it touched.
Result<long> Touched(const pg::Rows& rows) {
  sql::RowReader counts(rows, 0);
  const long touched = counts.Int64(0) + counts.Int64(1);
  if (!counts.status().ok()) return counts.status();
  return touched;
}

// Completes a drain of pages `$1` of transform `$2` (a key of `n` columns)
// in one statement: the pages and their delta rows go, the transform's last_applied_at is
// stamped (catalog/states.h), and the holds of the pages' keys that an
// earlier transaction made (drain/held_keys.h) are released: a key that was
// just recomputed without failing is free. A hold made in this transaction
// (this unit's own failing keys, last_failed_at = now()) stays. It returns
// the pages' keys that hold quarantined values recorded by an earlier
// transaction (drain/quarantine.h), for HealQuarantinedKeys to compute
// again. Each EXISTS is a one-time filter: with no held or quarantined key
// the pages' keys are not read. One statement rather than several: each
// round trip is latency on every write.
std::string CompleteSql(const std::string& schema, const plan::TransformPlan& plan) {
  const size_t n = plan.unit_key().size();
  // A hold or a record is of a page's key when the plan says the two units
  // may cover one row (the same key; or, for side units, the same root: a
  // customer's recompute may heal an order's row, and an order's its
  // customer's NULL-extended row). Compared as text, element by element.
  auto of_a_page = [&](const std::string& key) {
    std::vector<std::string> held;
    for (size_t i = 0; i < n; ++i) held.push_back(sql::KeyElement(key, i));
    return "EXISTS (SELECT 1 FROM done AS p, " + sql::KeyRows("p.keys", "p.id", n, "k") +
           " WHERE " + plan.UnitsOverlap(held, sql::KeyRowCells("k", n)) + ")";
  };
  return sql::WithSchema(R"sql(
WITH done AS (DELETE FROM {schema}.pages WHERE id = ANY($1::bigint[]) RETURNING id, keys),
gone AS (DELETE FROM {schema}.delta_rows WHERE page_id = ANY($1::bigint[])),
)sql",
                         schema) +
         catalog::NoteAppliedCte(schema, "$2::int") +
         sql::WithSchema(R"sql(,
released AS (
  DELETE FROM {schema}.held_keys h
  WHERE EXISTS (SELECT 1 FROM {schema}.held_keys WHERE transform_id = $2::int)
    AND h.transform_id = $2::int AND h.last_failed_at < now()
    AND )sql",
                         schema) +
         of_a_page("h.key") +
         sql::WithSchema(R"sql(
)
SELECT DISTINCT q.key::text FROM {schema}.quarantined_rows q
WHERE EXISTS (SELECT 1 FROM {schema}.quarantined_rows WHERE transform_id = $2::int)
  AND q.transform_id = $2::int AND q.since < now()
  AND )sql",
                         schema) +
         of_a_page("q.key");
}
}  // namespace

std::vector<std::unique_ptr<Unit>> HalveKeys(const plan::TransformPlan& plan,
                                             const std::vector<std::string>& keys) {
  std::vector<std::unique_ptr<Unit>> out;
  if (keys.size() < 2) return out;
  const auto middle = keys.begin() + static_cast<long>(keys.size() / 2);
  out.push_back(std::make_unique<KeysUnit>(plan, std::vector<std::string>(keys.begin(), middle)));
  out.push_back(std::make_unique<KeysUnit>(plan, std::vector<std::string>(middle, keys.end())));
  return out;
}

std::vector<std::unique_ptr<Unit>> CutIntoKeys(const plan::TransformPlan& plan,
                                               std::vector<std::string> keys) {
  if (keys.size() != 1) return HalveKeys(plan, keys);
  std::vector<std::unique_ptr<Unit>> parts;
  parts.push_back(std::make_unique<KeysUnit>(plan, std::move(keys)));
  return parts;
}

Result<long> PagesUnit::Apply(pg::Connection& conn) {
  // Each page statement's one parameter is a list of page ids, whose keys
  // and delta rows the planner cannot see: a plan made for one batch's ids
  // is the plan for any other's. So the statements run on PostgreSQL's
  // generic plan of the prepared statement, made once per session (again
  // when a table they read is altered or analyzed), where the default
  // planned each batch anew: a grouping's delta statement, hundreds of
  // expressions, took 20-38 ms to plan and 6-10 ms to run for a 100-row
  // batch (bench/README.md, "Page statements planned once"). Local to the
  // unit's savepoint and restored after it. The setting, the statements
  // and the restore go in one round trip (a pipeline), broken only where
  // a statement's `needed` query must be answered before it is sent.
  static constexpr const char* kGenericPlans =
      "SELECT pg_catalog.set_config('trellis.plan_cache_mode', "
      "pg_catalog.current_setting('plan_cache_mode'), true), "
      "pg_catalog.set_config('plan_cache_mode', 'force_generic_plan', true)";
  static constexpr const char* kRestore =
      "SELECT pg_catalog.set_config('plan_cache_mode', "
      "pg_catalog.current_setting('trellis.plan_cache_mode'), true)";
  const pg::Params ids = {page_ids_};
  std::vector<pg::PipelinedStatement> queued = {{kGenericPlans, {}}};
  std::vector<bool> counted = {false};  // whose rows count as touched
  long touched = 0;
  // Sends what is queued; returns the last statement's rows.
  auto send = [&]() -> Result<pg::Rows> {
    auto ran = conn.QueryPipelined(queued);
    if (!ran.ok()) return ran.status();
    for (size_t i = 0; i < queued.size(); ++i) {
      if (!counted[i]) continue;
      // A recompute reports (written, deleted); a delta statement its row count.
      if (ran->at(i).empty()) {
        touched += ran->at(i).affected;
        continue;
      }
      auto rows = Touched(ran->at(i));
      if (!rows.ok()) return rows.status();
      touched += rows.value();
    }
    queued.clear();
    counted.clear();
    return std::move(ran->back());
  };
  for (const plan::PagesStatement& statement : statements_) {
    if (!statement.needed.empty()) {
      queued.push_back({statement.needed, ids});
      counted.push_back(false);
      auto needed = send();
      if (!needed.ok()) return needed.status();
      if (needed->text(0, 0) != "t") continue;
    }
    queued.push_back({statement.sql, ids});
    counted.push_back(true);
  }
  queued.push_back({kRestore, {}});
  counted.push_back(false);
  auto restored = send();
  if (!restored.ok()) return restored.status();
  return touched;
}

Result<std::vector<std::unique_ptr<Unit>>> PagesUnit::Split(pg::Connection& conn) {
  // The pages' distinct keys, each a key literal.
  const size_t n = plan_.unit_key().size();
  auto keys = conn.Query("SELECT DISTINCT " + sql::KeyLiteralOf(sql::KeyOfRow("k", n)) + " FROM " +
                             sql::Ident(schema_) + ".pages AS p, " +
                             sql::KeyRows("p.keys", "p.id", n, "k") +
                             " WHERE p.id = ANY($1::bigint[]) ORDER BY 1",
                         {page_ids_});
  if (!keys.ok()) return keys.status();
  std::vector<std::string> all;
  for (size_t r = 0; r < keys->size(); ++r) all.push_back(keys->text(r, 0));
  return CutIntoKeys(plan_, std::move(all));
}

Status PagesUnit::Complete(pg::Connection& conn) {
  // Prepared: its text changes only with the schema and the plan's key.
  auto completed = conn.QueryPrepared(CompleteSql(schema_, plan_),
                                      {page_ids_, std::to_string(plan_.transform_id())});
  if (!completed.ok()) return completed.status();
  quarantined_.clear();
  for (size_t r = 0; r < completed->size(); ++r) quarantined_.push_back(completed->text(r, 0));
  return Status::OK();
}

Status PagesUnit::Defer(pg::Connection& conn, const std::vector<const Unit*>&,
                        const Status& error) {
  // The pages stay, waiting with exponential backoff (capped at a minute);
  // a retry recomputes all their keys again, which is idempotent.
  return conn.Exec(sql::WithSchema(R"sql(
UPDATE {schema}.pages SET attempts = attempts + 1, last_error = $2,
  retry_at = now() + least(interval '60 seconds', interval '100 milliseconds' * power(2, attempts))
WHERE id = ANY($1::bigint[]))sql",
                                   schema_),
                   {page_ids_, error.message()});
}

std::string KeysUnit::Describe() const {
  if (keys_.size() == 1) return "key " + keys_.front();
  return std::to_string(keys_.size()) + " keys from " + keys_.front();
}

Result<long> KeysUnit::Apply(pg::Connection& conn) {
  auto applied = conn.QueryPrepared(plan_.RecomputeKeysSql(), {sql::KeyRowsLiteral(keys_)});
  if (!applied.ok()) return applied.status();
  return Touched(applied.value());
}

Result<std::optional<std::string>> KeysUnit::OneKey(pg::Connection&) const {
  if (keys_.size() != 1) return std::optional<std::string>();
  return std::optional<std::string>(keys_.front());
}

Result<std::vector<std::unique_ptr<Unit>>> KeysUnit::Split(pg::Connection&) {
  return HalveKeys(plan_, keys_);
}

}  // namespace trellis::drain
