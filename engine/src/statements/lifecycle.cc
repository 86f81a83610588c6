#include "statements/lifecycle.h"

#include "capture/sources.h"
#include "catalog/migrations.h"
#include "catalog/model.h"
#include "catalog/rebuild.h"
#include "grammar/address.h"
#include "grammar/render.h"
#include "sql/quote.h"

namespace trellis::statements {
namespace {

struct Resolved {
  catalog::Transform transform;
  std::optional<std::string> column;
};

// Resolves an address to a transform (locked FOR UPDATE) and maybe a column,
// taking the first reading that names an existing transform.
Result<Resolved> ResolveAddress(pg::Connection& conn, const std::string& schema,
                                const std::vector<std::string>& parts) {
  for (const auto& reading : grammar::AddressReadings(parts)) {
    auto t = catalog::LoadTransform(conn, schema, reading.target.name, /*lock=*/true);
    if (!t.ok()) {
      if (t.status().code() == Code::kNotFound) continue;
      return t.status();
    }
    if (reading.target.schema && *reading.target.schema != t->target_schema) continue;
    if (reading.column) {
      bool found = false;
      for (const auto& c : t->columns) found = found || c.name == *reading.column;
      if (!found) {
        return Status::NotFound("transform " + sql::Ident(t->name()) + " has no column " +
                                sql::Ident(*reading.column));
      }
    }
    return Resolved{std::move(t.value()), reading.column};
  }
  std::vector<std::string> shown;
  for (const auto& p : parts) shown.push_back(grammar::RenderName(p));
  return Status::NotFound("no transform named " + sql::Join(shown, "."));
}

std::string Address(const Resolved& r) {
  return r.transform.name() + (r.column ? "." + *r.column : "");
}

std::string TargetTable(const catalog::Transform& t) {
  return sql::Qualified(t.target_schema, t.target_name);
}

Result<ApplyResult> Commit(std::unique_ptr<pg::Transaction>& tx, ApplyResult result) {
  TRELLIS_RETURN_IF_ERROR(tx->Commit());
  return result;
}

}  // namespace

Result<ApplyResult> Pause(pg::Connection& conn, const std::string& schema,
                          const grammar::PauseStmt& stmt) {
  auto tx = pg::Transaction::Begin(conn);
  if (!tx.ok()) return tx.status();
  TRELLIS_RETURN_IF_ERROR(catalog::CheckMigrated(conn, schema));
  auto r = ResolveAddress(conn, schema, stmt.address);
  if (!r.ok()) return r.status();
  const std::string id = std::to_string(r->transform.id);
  if (r->column) {
    TRELLIS_RETURN_IF_ERROR(conn.Exec(sql::WithSchema(R"sql(
UPDATE {schema}.transform_columns
SET state = 'paused', paused_kind = 'operator', paused_reason = 'paused by PAUSE TRANSFORM'
WHERE transform_id = $1::int AND name = $2 AND state <> 'paused')sql",
                                                      schema),
                                      {id, *r->column}));
  } else {
    // Pausing keeps the backfill cursor and the ledger: RESUME carries on.
    TRELLIS_RETURN_IF_ERROR(conn.Exec(sql::WithSchema(R"sql(
UPDATE {schema}.transforms
SET status = 'paused', paused_kind = 'operator', paused_reason = 'paused by PAUSE TRANSFORM',
    paused_at = now()
WHERE id = $1::int AND status <> 'paused')sql",
                                                      schema),
                                      {id}));
  }
  return Commit(tx.value(), ApplyResult{"paused", r->transform.name(), {Address(*r)}});
}

Result<ApplyResult> Resume(pg::Connection& conn, const std::string& schema,
                           const grammar::ResumeStmt& stmt) {
  auto tx = pg::Transaction::Begin(conn);
  if (!tx.ok()) return tx.status();
  TRELLIS_RETURN_IF_ERROR(catalog::CheckMigrated(conn, schema));
  auto r = ResolveAddress(conn, schema, stmt.address);
  if (!r.ok()) return r.status();
  const catalog::Transform& t = r->transform;
  const std::string id = std::to_string(t.id);
  std::vector<std::string> resumed;
  if (r->column) {
    auto updated = conn.Query(sql::WithSchema(R"sql(
UPDATE {schema}.transform_columns
SET state = 'live', paused_kind = NULL, paused_reason = NULL
WHERE transform_id = $1::int AND name = $2 AND state = 'paused' RETURNING 1)sql",
                                              schema),
                              {id, *r->column});
    if (!updated.ok()) return updated.status();
    if (!updated->empty()) {
      // The column missed writes while paused: rebuild it.
      TRELLIS_RETURN_IF_ERROR(
          catalog::RequestRebuild(conn, schema, t.id, std::vector<std::string>{*r->column}));
      resumed.push_back(Address(*r));
    }
  } else if (t.status == "paused") {
    // Pages kept accumulating while paused, so an operator pause resumes by
    // draining them; a disruption (capture was off) lost writes: rebuild.
    if (t.capture_disrupted) {
      // Capture first: a write committed after this RESUME is captured, and
      // the rebuild below covers every write before it.
      TRELLIS_RETURN_IF_ERROR(capture::Reinstall(conn, schema, t.source));
    }
    if (t.capture_disrupted || (t.paused_kind && *t.paused_kind != "operator")) {
      TRELLIS_RETURN_IF_ERROR(catalog::RequestRebuild(conn, schema, t.id, std::nullopt));
    }
    TRELLIS_RETURN_IF_ERROR(conn.Exec(sql::WithSchema(R"sql(
UPDATE {schema}.transforms SET
  paused_kind = NULL, paused_reason = NULL, paused_at = NULL, capture_disrupted = false,
  status = CASE
    WHEN backfill_finished_at IS NULL AND backfill_started_at IS NULL THEN 'waiting_to_backfill'
    WHEN backfill_finished_at IS NULL THEN 'backfilling'
    ELSE 'catching_up' END,
  catch_up_page = (SELECT max(id) FROM {schema}.pages WHERE transform_id = $1::int)
WHERE id = $1::int)sql",
                                                      schema),
                                      {id}));
    resumed.push_back(Address(*r));
  }
  return Commit(tx.value(), ApplyResult{"resumed", t.name(), resumed});
}

Result<ApplyResult> Drop(pg::Connection& conn, const std::string& schema,
                         const grammar::DropStmt& stmt) {
  auto tx = pg::Transaction::Begin(conn);
  if (!tx.ok()) return tx.status();
  TRELLIS_RETURN_IF_ERROR(catalog::CheckMigrated(conn, schema));
  TRELLIS_RETURN_IF_ERROR(conn.Exec(
      sql::WithSchema("LOCK TABLE {schema}.transforms IN SHARE ROW EXCLUSIVE MODE", schema)));
  auto t = catalog::LoadTransform(conn, schema, stmt.target.name, /*lock=*/true);
  if (!t.ok()) return t.status();
  if (stmt.target.schema && *stmt.target.schema != t->target_schema) {
    return Status::NotFound("no transform named " + grammar::RenderQualified(stmt.target));
  }
  if (t->status != "paused") {
    return Status::Validation("transform " + sql::Ident(t->name()) +
                              " is not paused; run PAUSE TRANSFORM " +
                              grammar::RenderName(t->name()) + " first, then DROP it");
  }
  const std::string target = TargetTable(t.value());
  TRELLIS_RETURN_IF_ERROR(conn.Exec("DROP TABLE IF EXISTS " + target));
  TRELLIS_RETURN_IF_ERROR(
      conn.Exec(sql::WithSchema("DELETE FROM {schema}.transforms WHERE id = $1::int", schema),
                {std::to_string(t->id)}));
  TRELLIS_RETURN_IF_ERROR(capture::ReleaseIfUnused(conn, schema, t->source));
  return Commit(tx.value(), ApplyResult{"dropped", t->name(), {}});
}

}  // namespace trellis::statements
