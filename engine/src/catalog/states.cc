#include "catalog/states.h"

#include <set>
#include <stdexcept>

#include "catalog/charges.h"
#include "catalog/jobs.h"
#include "sql/quote.h"

namespace trellis::catalog {
namespace {

// The wire name behind a slot's `name`, checked against the enum's set so a
// statement here can only ever write a value the rest of the system knows.
template <typename E>
std::string_view Checked(std::string_view name) {
  if (!FromWireName<E>(name)) throw std::logic_error("unknown state in SQL: " + std::string(name));
  return name;
}

std::string_view SlotValue(std::string_view set, std::string_view name) {
  if (set == "state") return Checked<TransformState>(name);
  if (set == "kind") return Checked<PauseKind>(name);
  if (set == "column") return Checked<ColumnState>(name);
  throw std::logic_error("unknown slot in SQL: " + std::string(set));
}

}  // namespace

std::string StateSql(std::string_view text, const std::string& schema) {
  std::string out;
  size_t at = 0;
  for (size_t open; (open = text.find('{', at)) != std::string_view::npos;) {
    const size_t close = text.find('}', open);
    if (close == std::string_view::npos) break;
    const std::string_view slot = text.substr(open + 1, close - open - 1);
    const size_t colon = slot.find(':');
    out.append(text.substr(at, open - at));
    if (colon == std::string_view::npos) {
      out.append(text.substr(open, close + 1 - open));  // {schema}, filled below
    } else {
      out.append(sql::Literal(SlotValue(slot.substr(0, colon), slot.substr(colon + 1))));
    }
    at = close + 1;
  }
  out.append(text.substr(at));
  return sql::WithSchema(out, schema);
}

namespace {

std::string Render(std::string_view text, const std::string& schema) {
  return StateSql(text, schema);
}

std::string Id(int id) { return std::to_string(id); }

}  // namespace

Status Pause(pg::Connection& conn, const std::string& schema, int id, PauseKind kind,
             const std::string& reason) {
  // Pausing keeps the build cursor and the ledger: RESUME carries on.
  return conn.Exec(Render(R"sql(
UPDATE {schema}.transforms
SET status = {state:paused}, paused_kind = $2, paused_reason = $3, paused_at = now()
WHERE id = $1::int AND status <> {state:paused})sql",
                          schema),
                   {Id(id), std::string(WireName(kind)), reason});
}

Status PauseColumn(pg::Connection& conn, const std::string& schema, int id,
                   const std::string& column, PauseKind kind, const std::string& reason) {
  return conn.Exec(Render(R"sql(
UPDATE {schema}.transform_columns
SET state = {column:paused}, paused_kind = $3, paused_reason = $4, paused_at = now()
WHERE transform_id = $1::int AND name = $2 AND state <> {column:paused})sql",
                          schema),
                   {Id(id), column, std::string(WireName(kind)), reason});
}

// Locks column `column` of transform `id` until the transaction ends.
Status LockColumn(pg::Connection& conn, const std::string& schema, int id,
                  const std::string& column) {
  return conn.Exec(Render(R"sql(
SELECT 1 FROM {schema}.transform_columns WHERE transform_id = $1::int AND name = $2 FOR UPDATE)sql",
                          schema),
                   {Id(id), column});
}

Result<bool> QuarantineColumn(pg::Connection& conn, const std::string& schema, int id,
                              const std::string& column, const std::string& reason) {
  // Locked first, and the state read by a statement after the lock: a
  // LiftQuarantine that committed meanwhile is seen (and undone).
  TRELLIS_RETURN_IF_ERROR(LockColumn(conn, schema, id, column));
  auto paused = conn.Query(Render(R"sql(
UPDATE {schema}.transform_columns
SET state = {column:paused}, paused_kind = {kind:quarantine}, paused_reason = $3, paused_at = now()
WHERE transform_id = $1::int AND name = $2 AND state = {column:live} RETURNING 1)sql",
                                  schema),
                           {Id(id), column, reason});
  if (!paused.ok()) return paused.status();
  return !paused->empty();
}

Result<bool> LiftQuarantine(pg::Connection& conn, const std::string& schema, int id,
                            const std::string& column) {
  // Locked first, so the records are read after every charging transaction
  // that locked the column before (QuarantineColumn) committed.
  TRELLIS_RETURN_IF_ERROR(LockColumn(conn, schema, id, column));
  auto lifted = conn.Query(Render(R"sql(
UPDATE {schema}.transform_columns
SET state = {column:live}, paused_kind = NULL, paused_reason = NULL, paused_at = NULL
WHERE transform_id = $1::int AND name = $2 AND state = {column:paused}
  AND paused_kind = {kind:quarantine}
  AND NOT EXISTS (SELECT 1 FROM {schema}.quarantined_rows
                  WHERE transform_id = $1::int AND column_name = $2)
RETURNING 1)sql",
                                  schema),
                           {Id(id), column});
  if (!lifted.ok()) return lifted.status();
  return !lifted->empty();
}

Status Resume(pg::Connection& conn, const std::string& schema, const Transform& t) {
  if (t.capture_disrupted || (t.paused_kind && *t.paused_kind != PauseKind::kOperator)) {
    TRELLIS_RETURN_IF_ERROR(RequestRebuild(conn, schema, t.id, std::nullopt));
  }
  return conn.Exec(Render(R"sql(
UPDATE {schema}.transforms SET
  paused_kind = NULL, paused_reason = NULL, paused_at = NULL, capture_disrupted = false,
  capture_failure = NULL, capture_failed_at = NULL,
  status = CASE
    WHEN backfill_finished_at IS NULL AND backfill_started_at IS NULL THEN {state:waiting_to_backfill}
    WHEN backfill_finished_at IS NULL THEN {state:backfilling}
    ELSE {state:catching_up} END,
  catch_up_page = (SELECT max(id) FROM {schema}.pages WHERE transform_id = $1::int)
WHERE id = $1::int)sql",
                          schema),
                   {Id(t.id)});
}

Result<bool> ResumeColumn(pg::Connection& conn, const std::string& schema, int id,
                          const std::string& column) {
  auto updated = conn.Query(Render(R"sql(
UPDATE {schema}.transform_columns
SET state = {column:live}, paused_kind = NULL, paused_reason = NULL, paused_at = NULL
WHERE transform_id = $1::int AND name = $2 AND state = {column:paused} RETURNING 1)sql",
                                   schema),
                            {Id(id), column});
  if (!updated.ok()) return updated.status();
  if (updated->empty()) return false;
  TRELLIS_RETURN_IF_ERROR(RequestRebuild(conn, schema, id, std::vector<std::string>{column}));
  return true;
}

Status RequestRebuild(pg::Connection& conn, const std::string& schema, int id,
                      const std::optional<std::vector<std::string>>& columns) {
  // Lock the transform's row first: every running build job holds it shared,
  // so what follows sees every row they wrote and replaces jobs no one runs.
  // A first build still running has appended rows without a key to catch a
  // second copy: empty the target, drop its ranges and start that build
  // again, whole.
  auto unbuilt =
      conn.Query(Render("SELECT target_schema, target_name, key_indexed FROM {schema}.transforms "
                        "WHERE id = $1::int FOR NO KEY UPDATE",
                        schema),
                 {Id(id)});
  if (!unbuilt.ok()) return unbuilt.status();
  if (unbuilt->empty()) return Status::OK();
  // A rebuild computes every key it covers again: what still fails is
  // charged again (a first build not finished starts over, whole).
  TRELLIS_RETURN_IF_ERROR(ClearCharges(
      conn, schema, id,
      unbuilt->text(0, 2) == "f" ? std::optional<std::vector<std::string>>() : columns));
  if (unbuilt->text(0, 2) == "f") {
    TRELLIS_RETURN_IF_ERROR(
        conn.Exec("DELETE FROM " + sql::Qualified(unbuilt->text(0, 0), unbuilt->text(0, 1))));
    TRELLIS_RETURN_IF_ERROR(DropBuildJobs(conn, schema, id));
  } else {
    TRELLIS_RETURN_IF_ERROR(RequestRebuildJob(conn, schema, id, columns));
  }
  // backfill_started_at NULL: the build is planned again when it starts.
  return conn.Exec(Render(R"sql(
UPDATE {schema}.transforms SET
  backfill_total = NULL,
  backfill_started_at = NULL,
  backfill_finished_at = NULL,
  catch_up_page = NULL,
  status = CASE WHEN status = {state:paused} THEN {state:paused}
                ELSE {state:waiting_to_backfill} END
WHERE id = $1::int)sql",
                          schema),
                   {Id(id)});
}

Status FinishEmptyBuild(pg::Connection& conn, const std::string& schema, int id) {
  return conn.Exec(Render(R"sql(
UPDATE {schema}.transforms SET
  status = {state:live}, key_indexed = true, backfill_started_at = now(),
  backfill_finished_at = now(), backfill_total = 0, last_applied_at = now()
WHERE id = $1::int)sql",
                          schema),
                   {Id(id)});
}

// A build's start and finish are stamped with the clock, not the
// transaction's start (now()): a stage's build starts in a transaction that
// may have begun before the one that finished the stage it reads (it waited
// on that one's locks), and "started after the upstream finished" must read
// as such in the catalog.
Status StartBuild(pg::Connection& conn, const std::string& schema, int id, int64_t total_rows) {
  return conn.Exec(Render(R"sql(
UPDATE {schema}.transforms SET status = {state:backfilling}, backfill_started_at = clock_timestamp(),
  backfill_total = $2::bigint
WHERE id = $1::int)sql",
                          schema),
                   {Id(id), std::to_string(total_rows)});
}

Status FinishBuild(pg::Connection& conn, const std::string& schema, int id) {
  return conn.Exec(Render(R"sql(
UPDATE {schema}.transforms SET
  status = {state:catching_up}, backfill_finished_at = clock_timestamp(), key_indexed = true,
  last_applied_at = now(),
  catch_up_page = (SELECT max(id) FROM {schema}.pages WHERE transform_id = $1::int)
WHERE id = $1::int)sql",
                          schema),
                   {Id(id)});
}

std::string CatchUpDrainedSql(const std::string& schema, std::string_view alias) {
  const std::string t(alias);
  return Render("NOT EXISTS (SELECT 1 FROM {schema}.pages p WHERE p.transform_id = " + t +
                    ".id AND p.id <= coalesce(" + t + ".catch_up_page, 0))",
                schema);
}

std::string CaughtUpSql(const std::string& schema, std::string_view alias) {
  const std::string t(alias);
  return Render("(" + t + ".status = {state:catching_up} AND ", schema) +
         CatchUpDrainedSql(schema, alias) + ")";
}

Status PromoteCaughtUp(pg::Connection& conn, const std::string& schema) {
  // A row another transaction holds is skipped, not waited for: this update
  // locks several rows in whatever order it scans them, and a statement
  // that locks two itself (a grouped join's pair: PAUSE, ALTER,
  // request_backfill) could deadlock with it and be cancelled (seen). The
  // next round promotes the row; reads count it live already (CaughtUpSql).
  return conn.Exec(Render(R"sql(
UPDATE {schema}.transforms t SET status = {state:live}
FROM (SELECT c.id FROM {schema}.transforms c WHERE )sql",
                          schema) +
                   CaughtUpSql(schema, "c") +
                   " FOR UPDATE SKIP LOCKED) AS free WHERE t.id = free.id");
}

std::string NoteAppliedCte(const std::string& schema, std::string_view id_param) {
  std::string text = Render(R"sql(noted AS (
  UPDATE {schema}.transforms SET last_applied_at = now()
  WHERE id = {id}
    AND (last_applied_at IS NULL OR last_applied_at < now() - interval '100 milliseconds')
  RETURNING id
))sql",
                            schema);
  const size_t at = text.find("{id}");
  return text.replace(at, 4, id_param);
}

Result<std::vector<std::string>> MarkCaptureDisrupted(pg::Connection& conn,
                                                      const std::string& schema, int source_id,
                                                      const std::string& table,
                                                      const std::string& problem) {
  // A hidden stage is named by its owner, the transform the user knows and
  // resumes (catalog/parts.h), and counted once with it.
  auto changed = conn.Query(Render(R"sql(
WITH named AS (
  SELECT t.id, coalesce(o.target_name, t.target_name) AS user_name
  FROM {schema}.transforms t LEFT JOIN {schema}.transforms o ON o.id = t.owner_id
  WHERE t.id IN (SELECT transform_id FROM {schema}.transform_inputs WHERE source_id = $1::int)
)
UPDATE {schema}.transforms AS t SET
  capture_disrupted = true,
  capture_failure = format('capture of %s was changed outside Trellis (%s), so writes made since '
                           'may be missing from the target; RESUME TRANSFORM %s reinstalls '
                           'capture and rebuilds it', $2::text, $3::text, quote_ident(n.user_name)),
  capture_failed_at = now(),
  paused_kind = CASE WHEN t.status = {state:paused} THEN t.paused_kind ELSE {kind:disruption} END,
  paused_reason = CASE WHEN t.status = {state:paused} THEN t.paused_reason ELSE
    format('capture of %s was changed outside Trellis (%s), so writes made since may be missing '
           'from the target; RESUME TRANSFORM %s reinstalls capture and rebuilds it',
           $2::text, $3::text, quote_ident(n.user_name)) END,
  paused_at = CASE WHEN t.status = {state:paused} THEN t.paused_at ELSE now() END,
  status = {state:paused}
FROM named n
WHERE t.id = n.id AND NOT (t.status = {state:paused} AND t.capture_disrupted)
RETURNING n.user_name)sql",
                                   schema),
                            {Id(source_id), table, problem});
  if (!changed.ok()) return changed.status();
  std::set<std::string> names;
  for (size_t r = 0; r < changed->size(); ++r) names.insert(changed->text(r, 0));
  return std::vector<std::string>(names.begin(), names.end());
}

Status RecordDefinition(pg::Connection& conn, const std::string& schema, int id,
                        const std::string& definition) {
  return conn.Exec(
      Render("UPDATE {schema}.transforms SET definition = $2 WHERE id = $1::int", schema),
      {Id(id), definition});
}

Status RecordColumnExpression(pg::Connection& conn, const std::string& schema, int id,
                              const std::string& column, const std::string& expr,
                              const std::string& sql_type) {
  return conn.Exec(Render(R"sql(
UPDATE {schema}.transform_columns SET expr = $3, sql_type = $4
WHERE transform_id = $1::int AND name = $2)sql",
                          schema),
                   {Id(id), column, expr, sql_type});
}

}  // namespace trellis::catalog
