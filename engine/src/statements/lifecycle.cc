#include "statements/lifecycle.h"

#include "capture/sources.h"
#include "catalog/address.h"
#include "catalog/chains.h"
#include "catalog/composite.h"
#include "catalog/locks.h"
#include "catalog/migrations.h"
#include "catalog/model.h"
#include "catalog/parts.h"
#include "catalog/self_check_cancel.h"
#include "catalog/states.h"
#include "grammar/address.h"
#include "grammar/render.h"
#include "sql/quote.h"

namespace trellis::statements {
namespace {

using Resolved = catalog::ResolvedAddress;

// Resolves an address to a transform, its row locked (FOR NO KEY UPDATE).
Result<Resolved> ResolveAddress(pg::Connection& conn, const std::string& schema,
                                const std::vector<std::string>& parts) {
  return catalog::ResolveAddress(conn, schema, parts, /*lock=*/true);
}

// Names as every read and statement takes them back (grammar/address.h).
std::string Address(const Resolved& r) {
  return grammar::RenderAddress(r.transform.name(), r.column);
}

std::string TargetTable(const catalog::Transform& t) {
  return sql::Qualified(t.target_schema, t.target_name);
}

// Takes the lock that installing or removing capture on a source needs
// before any lock on the catalog's rows, so a long transaction on the
// source delays this statement and nothing else (spec/engine.md "Define",
// step 3): the sources of `transform` and of each of its stages
// (catalog/composite.h). Nothing to lock when the table is gone.
Status LockSourceFirst(pg::Connection& conn, const std::string& schema,
                       const std::string& transform, bool only_if_disrupted) {
  auto name = conn.Query(sql::WithSchema(R"sql(
SELECT format('%I.%I', n.nspname, c.relname)
FROM {schema}.transforms t
JOIN {schema}.transform_inputs i ON i.transform_id = t.id
JOIN {schema}.sources s ON s.id = i.source_id
JOIN pg_catalog.pg_class c ON c.oid = s.relid
JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE (t.target_name = $1 OR t.owner_id IN (
         SELECT u.id FROM {schema}.transforms u WHERE u.target_name = $1 AND u.owner_id IS NULL))
  AND (t.capture_disrupted OR NOT $2::boolean)
ORDER BY t.id DESC, i.ordinal)sql",
                                         schema),
                         {transform, only_if_disrupted ? "t" : "f"});
  if (!name.ok()) return name.status();
  for (size_t r = 0; r < name->size(); ++r) {
    TRELLIS_RETURN_IF_ERROR(
        conn.Exec("LOCK TABLE " + name->text(r, 0) + " IN SHARE ROW EXCLUSIVE MODE"));
  }
  return Status::OK();
}

// The sources `t` reads, each once (a table joined twice is one source).
std::vector<catalog::Source> SourcesOf(const catalog::Transform& t) {
  std::vector<catalog::Source> out;
  for (const auto& input : t.inputs) {
    bool seen = false;
    for (const auto& s : out) seen = seen || s.id == input.source.id;
    if (!seen) out.push_back(input.source);
  }
  return out;
}

// Resumes `t` as a whole when it is paused; false when it was not.
Result<bool> ResumeWhole(pg::Connection& conn, const std::string& schema,
                         const catalog::Transform& t) {
  if (t.state != TransformState::kPaused) return false;
  if (t.capture_disrupted) {
    // Capture first: a write committed after this RESUME is captured, and
    // the rebuild the resume starts covers every write before it.
    for (const auto& source : SourcesOf(t)) {
      TRELLIS_RETURN_IF_ERROR(capture::Reinstall(conn, schema, source));
    }
  }
  TRELLIS_RETURN_IF_ERROR(catalog::Resume(conn, schema, t));
  return true;
}

// Drops `t`'s target and catalog rows, and the capture of every input it
// was the last reader of.
Status DropOne(pg::Connection& conn, const std::string& schema, const catalog::Transform& t) {
  TRELLIS_RETURN_IF_ERROR(conn.Exec("DROP TABLE IF EXISTS " + TargetTable(t)));
  // Its pages go by cascade; their delta rows (no foreign key: catalog
  // step 9 says why) go first, in the same statement.
  TRELLIS_RETURN_IF_ERROR(conn.Exec(sql::WithSchema(R"sql(
WITH gone AS (
  DELETE FROM {schema}.delta_rows
  WHERE page_id IN (SELECT id FROM {schema}.pages WHERE transform_id = $1::int))
DELETE FROM {schema}.transforms WHERE id = $1::int)sql",
                                                    schema),
                                    {std::to_string(t.id)}));
  // Every input's capture goes with its last reader.
  for (const auto& source : SourcesOf(t)) {
    TRELLIS_RETURN_IF_ERROR(capture::ReleaseIfUnused(conn, schema, source));
  }
  return Status::OK();
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
  const std::string reason = "paused by PAUSE TRANSFORM";
  if (r->column) {
    TRELLIS_RETURN_IF_ERROR(catalog::PauseColumn(conn, schema, r->transform.id, *r->column,
                                                 PauseKind::kOperator, reason));
  } else {
    TRELLIS_RETURN_IF_ERROR(
        catalog::Pause(conn, schema, r->transform.id, PauseKind::kOperator, reason));
    // A check of a paused target could only fail: its unfinished one ends
    // now, as cancelled, naming the pause (spec/engine.md "Self-check").
    const std::string name = grammar::RenderTransformName(r->transform.name());
    TRELLIS_RETURN_IF_ERROR(catalog::CancelSelfCheck(
        conn, schema, r->transform.id,
        "cancelled by PAUSE TRANSFORM " + name + ": RESUME it, then start the check again"));
    // A transform of stages pauses as one: each stage too.
    auto whole = catalog::LoadComposite(conn, schema, r->transform, /*lock=*/true);
    if (!whole.ok()) return whole.status();
    for (const auto& stage : whole->stages) {
      TRELLIS_RETURN_IF_ERROR(catalog::Pause(conn, schema, stage.id, PauseKind::kOperator, reason));
    }
  }
  return Commit(
      tx.value(),
      ApplyResult{"paused", grammar::RenderTransformName(r->transform.name()), {Address(*r)}});
}

Result<ApplyResult> Resume(pg::Connection& conn, const std::string& schema,
                           const grammar::ResumeStmt& stmt) {
  auto tx = pg::Transaction::Begin(conn);
  if (!tx.ok()) return tx.status();
  TRELLIS_RETURN_IF_ERROR(catalog::CheckMigrated(conn, schema));
  // A disrupted transform's RESUME reinstalls capture on its source.
  for (const auto& reading : grammar::AddressReadings(stmt.address)) {
    if (reading.column) continue;
    TRELLIS_RETURN_IF_ERROR(LockSourceFirst(conn, schema, reading.target.name, true));
  }
  // A column in quarantine in a hidden stage (quarantined/1 lists it under
  // the owner's name): RESUME of the owner's column resumes the stage's.
  auto stage = catalog::ResolveStageColumn(conn, schema, stmt.address, /*lock=*/true);
  if (!stage.ok()) return stage.status();
  if (stage.value()) {
    const Resolved& part = *stage.value();
    auto was_paused = catalog::ResumeColumn(conn, schema, part.transform.id, *part.column);
    if (!was_paused.ok()) return was_paused.status();
    auto owner = catalog::OwnerName(conn, schema, part.transform.name());
    if (!owner.ok()) return owner.status();
    std::vector<std::string> resumed;
    if (was_paused.value()) resumed.push_back(grammar::RenderAddress(owner.value(), part.column));
    return Commit(tx.value(),
                  ApplyResult{"resumed", grammar::RenderTransformName(owner.value()), resumed});
  }
  auto r = ResolveAddress(conn, schema, stmt.address);
  if (!r.ok()) return r.status();
  const catalog::Transform& t = r->transform;
  std::vector<std::string> resumed;
  if (r->column) {
    auto was_paused = catalog::ResumeColumn(conn, schema, t.id, *r->column);
    if (!was_paused.ok()) return was_paused.status();
    if (was_paused.value()) resumed.push_back(Address(*r));
  } else {
    // A transform of stages resumes as one: its stages first, in order.
    auto whole = catalog::LoadComposite(conn, schema, t, /*lock=*/true);
    if (!whole.ok()) return whole.status();
    for (const auto& stage : whole->stages) {
      auto stage_paused = ResumeWhole(conn, schema, stage);
      if (!stage_paused.ok()) return stage_paused.status();
    }
    auto was_paused = ResumeWhole(conn, schema, t);
    if (!was_paused.ok()) return was_paused.status();
    if (was_paused.value()) resumed.push_back(Address(*r));
  }
  return Commit(tx.value(),
                ApplyResult{"resumed", grammar::RenderTransformName(t.name()), resumed});
}

Result<ApplyResult> Drop(pg::Connection& conn, const std::string& schema,
                         const grammar::DropStmt& stmt) {
  auto tx = pg::Transaction::Begin(conn);
  if (!tx.ok()) return tx.status();
  TRELLIS_RETURN_IF_ERROR(catalog::CheckMigrated(conn, schema));
  // Dropping the last reader removes the source's capture triggers.
  TRELLIS_RETURN_IF_ERROR(LockSourceFirst(conn, schema, stmt.target.name, false));
  // No staging batch runs while the targets go, as for a define: a batch
  // reads the sources and the stages' targets, and one that had read a
  // source would wait for a target this statement dropped, while this one
  // waited for that source to remove its capture triggers (catalog/locks.h).
  TRELLIS_RETURN_IF_ERROR(catalog::FenceStaging(conn, schema));
  TRELLIS_RETURN_IF_ERROR(conn.Exec(
      sql::WithSchema("LOCK TABLE {schema}.transforms IN SHARE ROW EXCLUSIVE MODE", schema)));
  auto t = catalog::LoadTransform(conn, schema, stmt.target.name, /*lock=*/true);
  if (!t.ok()) return t.status();
  if (stmt.target.schema && *stmt.target.schema != t->target_schema) {
    return Status::NotFound("no transform named " + grammar::RenderQualified(stmt.target));
  }
  TRELLIS_RETURN_IF_ERROR(catalog::RefuseHiddenPart(conn, schema, t.value()));
  // Its target is another transform's input: dropping it would break that one.
  auto readers = catalog::ReadersOf(conn, schema, t->id);
  if (!readers.ok()) return readers.status();
  if (!readers->empty()) {
    std::vector<std::string> shown;
    for (const auto& r : readers.value()) {
      // A grouped join reads through its hidden part: named as the user knows it.
      auto owner = catalog::OwnerName(conn, schema, r);
      if (!owner.ok()) return owner.status();
      shown.push_back(grammar::RenderTransformName(owner.value()));
    }
    return Status::Validation("transform " + grammar::RenderTransformName(t->name()) +
                              " is read by " + sql::Join(shown, ", ") +
                              "; DROP TRANSFORM those first, then this one");
  }
  if (t->state != TransformState::kPaused) {
    return Status::Validation("transform " + sql::Ident(t->name()) +
                              " is not paused; run PAUSE TRANSFORM " +
                              grammar::RenderName(t->name()) + " first, then DROP it");
  }
  // A transform of stages goes as one: it, then its stages from the last,
  // each dropped after whatever read its target.
  auto whole = catalog::LoadComposite(conn, schema, t.value(), /*lock=*/true);
  if (!whole.ok()) return whole.status();
  TRELLIS_RETURN_IF_ERROR(DropOne(conn, schema, whole->owner));
  for (auto stage = whole->stages.rbegin(); stage != whole->stages.rend(); ++stage) {
    TRELLIS_RETURN_IF_ERROR(DropOne(conn, schema, *stage));
  }
  return Commit(tx.value(), ApplyResult{"dropped", grammar::RenderTransformName(t->name()), {}});
}

}  // namespace trellis::statements
