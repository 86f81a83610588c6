#include "staging/relation_sync.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "capture/capture_mode.h"
#include "capture/relations.h"
#include "capture/sources.h"
#include "catalog/model.h"
#include "catalog/states.h"
#include "log/component_log.h"
#include "pg/sqlstate.h"
#include "plan/bind.h"
#include "plan/key_sql.h"
#include "sql/key_text.h"
#include "sql/quote.h"
#include "staging/ledger_pages.h"

namespace trellis::staging {
namespace {

// How long a change waits for its relation's lock before it is left for
// the next round: writers to the relation queue behind the wait.
constexpr std::string_view kLockTimeout = "200ms";

// True when the plan's target is keyed by `source`'s own key read through
// the transform's FROM input, so a target key with no source row is stale.
bool KeyedBySource(const catalog::Transform& t, const plan::TransformPlan& p,
                   const catalog::Source& source) {
  const auto& from = t.inputs.front();
  if (from.source.id != source.id) return false;
  const auto& key = p.target_key();
  if (key.size() != source.key_columns.size()) return false;
  for (size_t i = 0; i < key.size(); ++i) {
    if (key[i].expr != sql::Ident(from.alias) + "." + sql::Ident(source.key_columns[i])) {
      return false;
    }
  }
  return true;
}

// True when one of `t`'s inputs is `source`.
bool Reads(const catalog::Transform& t, const catalog::Source& source) {
  return std::any_of(t.inputs.begin(), t.inputs.end(),
                     [&](const catalog::Input& input) { return input.source.id == source.id; });
}

// True when `p` stages its sources' changes as delta rows (a group
// transform on the delta path): a -1 it applies assumes the row was
// counted, which a writer still changing a half-detached partition through
// the source can break (spec/engine.md "A detach that is final").
bool TakesDeltas(const plan::TransformPlan& p) { return !p.DeltaRowsSql().empty(); }

// The target keys of `t` whose row in `source` is gone.
std::string StaleKeysSql(const catalog::Transform& t, const plan::TransformPlan& p,
                         const catalog::Source& source) {
  std::vector<std::string> match;
  for (size_t i = 0; i < p.target_key().size(); ++i) {
    const std::string target_column = "t." + sql::Ident(p.target_key()[i].name);
    match.push_back("s." + sql::Ident(source.key_columns[i]) + " = " + target_column);
  }
  // Staging dirties unit keys: those of the rows whose source row is gone.
  return "SELECT " + std::to_string(t.id) + " AS transform_id, " +
         sql::KeyText(plan::KeyNames(p.unit_key(), "t")) + " AS key FROM " + p.target() +
         " t WHERE NOT EXISTS (SELECT 1 FROM " +
         sql::Qualified(source.schema_name, source.table_name) + " s WHERE " +
         sql::Join(match, " AND ") + ")";
}

// Capture rows made from the rows of relation `relid`, one per row, in the
// source's routing layout, as if just written with `op`. Only its own rows,
// unless `subtree`: the relations under it are changes of their own when it
// is added or detached, but not when it is re-attached (only its own link
// changed, yet their rows were out with it).
Result<std::string> RowsAsCaptureSql(pg::Connection& conn, const catalog::Source& source,
                                     const std::string& relid, char op, bool subtree) {
  auto name = conn.Query(
      "SELECT format('%I.%I', n.nspname, c.relname) FROM pg_class c "
      "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = $1::oid",
      {relid});
  if (!name.ok()) return name.status();
  if (name->empty()) return Status::NotFound("the relation is gone");
  std::vector<std::string> values;
  for (const auto& column : source.routing_columns) {
    values.push_back("r." + sql::Ident(column) + "::text");
  }
  return "SELECT r.ctid AS id, " + std::to_string(source.id) + " AS source_id, '" +
         std::string(1, op) + "'::\"char\" AS op, ARRAY[ARRAY[" + sql::Join(values, ", ") +
         "]] AS routing, " + std::to_string(values.size()) + " AS width FROM " +
         (subtree ? "" : "ONLY ") + name->text(0, 0) + " r";
}

// The lock width of `t`'s units, when they may share rows.
std::map<int, size_t> LockWidths(const catalog::Transform& t, const plan::TransformPlan& p) {
  if (p.LockWidth() == p.unit_key().size()) return {};
  return {{t.id, p.LockWidth()}};
}

// Makes the pages of one transform's correction and records it. `rows` is
// the capture-row SQL of the relation's rows (empty: none); `stale` adds
// the anti-join of a target keyed by the source.
Status Correct(pg::Connection& conn, const std::string& schema, const catalog::Transform& t,
               const plan::TransformPlan& p, const catalog::Source& source,
               const capture::RelationEvent& event, const std::string& rows, bool stale) {
  std::vector<std::string> dirty;
  if (!rows.empty()) {
    for (const auto& d : p.DirtyKeySql()) {
      if (d.source_id == source.id) dirty.push_back(d.sql);
    }
  }
  if (stale) dirty.push_back(StaleKeysSql(t, p, source));
  if (dirty.empty()) return Status::OK();
  const std::string consumed =
      rows.empty() ? "SELECT NULL::tid AS id, NULL::int AS source_id, NULL::\"char\" AS op, "
                     "NULL::text[] AS routing, NULL::int AS width WHERE false"
                   : rows;
  const std::string statement = "WITH consumed AS (" + consumed + "), dirty AS (" +
                                sql::Join(dirty, "\nUNION\n") + "), " +
                                PageDirtyKeysSql(schema, 1, false, LockWidths(t, p)) + R"sql(
SELECT coalesce(array_agg(id), '{}'), coalesce(sum(key_count), 0) FROM paged)sql";
  auto paged = conn.Query(statement, {"1000"});
  if (!paged.ok()) return paged.status();
  if (paged->text(0, 1) == "0") return Status::OK();
  return conn.Exec(
      sql::WithSchema(R"sql(
INSERT INTO {schema}.corrections (transform_id, node, change, page_ids, keys_total)
VALUES ($1::int, $2, $3, $4::bigint[], $5::bigint))sql",
                      schema),
      {std::to_string(t.id), event.node, std::string(capture::ChangeName(event.change)),
       paged->text(0, 0), paged->text(0, 1)});
}

// A detach seen pending is final: rebuild every target that takes deltas
// from the source (every target reading it, when writes to the relation
// since the detach may have gone uncaptured: `captured` false), and forget
// the record. Reads no user table, so it takes no lock but the catalog's.
Status ApplyDetachFinished(pg::Connection& conn, const std::string& schema,
                           const std::vector<catalog::Transform>& transforms,
                           const std::optional<catalog::Source>& source,
                           const capture::RelationEvent& event, bool captured) {
  if (source) {
    for (const auto& t : transforms) {
      if (!Reads(t, *source)) continue;
      auto p = plan::Bind(t, schema);
      if (!p.ok()) return p.status();
      if (captured && !TakesDeltas(*p.value())) continue;
      TRELLIS_RETURN_IF_ERROR(catalog::RequestRebuild(conn, schema, t.id, std::nullopt));
    }
  }
  TRELLIS_RETURN_IF_ERROR(capture::ForgetPendingDetach(conn, schema, event.source_id, event.relid));
  // The detach's second transaction rewrote the relation's catalog rows:
  // their new signature is the one to watch from now on.
  return capture::NoteLeftRelation(conn, schema, event.source_id, event.relid);
}

// One change's capture and corrections: `event` is added, detached or
// dropped (a re-attach is applied as added, with `subtree`, once forgotten).
// `captured`: writes to a detached relation since its detach were captured
// (capture::LeftRelationWritesCaptured).
// REQUIRES: the relation locked, unless dropped.
Status ApplyChange(pg::Connection& conn, const std::string& schema,
                   const std::vector<catalog::Transform>& transforms,
                   const std::optional<catalog::Source>& source,
                   const capture::RelationEvent& event, bool subtree, bool captured) {
  if (event.change == capture::RelationChange::kAdded) {
    if (!source) return Status::OK();  // no reader left: released meanwhile
    TRELLIS_RETURN_IF_ERROR(
        capture::AddRelation(conn, schema, *source, event.relid, event.parent_relid, event.node));
  }
  // A detach is final unless its link is still pending (CONCURRENTLY, between
  // its two transactions or interrupted); the lock holds the answer, since
  // the detach's second transaction needs the relation's ACCESS EXCLUSIVE.
  bool pending = false;
  if (event.change == capture::RelationChange::kDetached) {
    auto found = capture::DetachPending(conn, event.relid);
    if (!found.ok()) return found.status();
    pending = found.value();
  }
  std::string rows;
  if (source && event.change != capture::RelationChange::kDropped) {
    auto made =
        RowsAsCaptureSql(conn, *source, event.relid,
                         event.change == capture::RelationChange::kAdded ? 'I' : 'D', subtree);
    if (!made.ok()) return made.status();
    rows = made.value();
  }
  if (source) {
    for (const auto& t : transforms) {
      if (!Reads(t, *source)) continue;
      auto p = plan::Bind(t, schema);
      if (!p.ok()) return p.status();
      const bool keyed = KeyedBySource(t, *p.value(), *source);
      // A final detach rebuilds the targets that take deltas from the source
      // (a writer that began before a CONCURRENTLY detach may have changed
      // the relation's rows after a recompute left them out; the detach
      // waited for it, so the rebuild reads what it did). A pending one is
      // corrected now and rebuilds once final (pending_detaches).
      const bool final_detach = event.change == capture::RelationChange::kDetached && !pending;
      // A detached relation's rows now are its rows at the detach only if
      // every write since was captured: a slot stopped publishing it at the
      // detach, so a row deleted from it since would be missing from the
      // correction, and its target rows kept. Then a target keyed by the
      // source finds its stale keys by the anti-join, and any other reader
      // is rebuilt, as an attached relation rebuilds it.
      const bool blind = final_detach && !captured;
      if ((!keyed && (event.change != capture::RelationChange::kDetached || blind)) ||
          (final_detach && TakesDeltas(*p.value()))) {
        TRELLIS_RETURN_IF_ERROR(catalog::RequestRebuild(conn, schema, t.id, std::nullopt));
        continue;
      }
      // A link capture never saw (event.unseen): rows of the relation that
      // writes through the parent brought in may have been deleted from it
      // directly since, uncaptured, so its rows as they are now do not name
      // every stale key; the anti-join does.
      const bool stale =
          keyed && (event.change != capture::RelationChange::kDetached || event.unseen || blind);
      TRELLIS_RETURN_IF_ERROR(Correct(conn, schema, t, *p.value(), *source, event, rows, stale));
    }
  }
  if (event.change != capture::RelationChange::kAdded) {
    TRELLIS_RETURN_IF_ERROR(capture::ForgetRelation(conn, schema, event.source_id, event.relid));
  }
  if (pending && source) {
    TRELLIS_RETURN_IF_ERROR(
        capture::RecordPendingDetach(conn, schema, event.source_id, event.relid, event.node));
  }
  return Status::OK();
}

Status Apply(pg::Connection& conn, const std::string& schema, const capture::RelationEvent& event) {
  TRELLIS_RETURN_IF_ERROR(
      conn.Exec("SET LOCAL lock_timeout = '" + std::string(kLockTimeout) + "'"));
  const bool relinked = event.change == capture::RelationChange::kRelinked;
  const bool finished = event.change == capture::RelationChange::kDetachFinished;
  if (event.change != capture::RelationChange::kDropped && !finished) {
    // Writers in flight on the relation finish first, so what it holds
    // below is everything written before its capture changed; the lock also
    // keeps its link as it is until the commit (capture/attachment.h). A
    // re-attached relation's rows below it are read too, so their writers
    // are waited for as well.
    auto locked =
        conn.Query(std::string("SELECT format('LOCK TABLE ") + (relinked ? "" : "ONLY ") +
                       "%I.%I IN SHARE ROW EXCLUSIVE MODE', n.nspname, "
                       "c.relname) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                       "WHERE c.oid = $1::oid",
                   {event.relid});
    if (!locked.ok()) return locked.status();
    if (locked->empty()) return Status::OK();  // dropped meanwhile: next round
    TRELLIS_RETURN_IF_ERROR(conn.Exec(locked->text(0, 0)));
  }
  auto transforms = catalog::LoadTransforms(conn, schema);
  if (!transforms.ok()) return transforms.status();
  std::optional<catalog::Source> source;
  for (const auto& t : transforms.value()) {
    for (const auto& input : t.inputs) {
      if (input.source.id == event.source_id) source = input.source;
    }
  }
  auto captured = capture::LeftRelationWritesCaptured(conn, schema);
  if (!captured.ok()) return captured.status();
  if (finished) {
    return ApplyDetachFinished(conn, schema, transforms.value(), source, event, *captured);
  }
  if (!relinked) {
    return ApplyChange(conn, schema, transforms.value(), source, event, false, *captured);
  }
  // Detached and then added again, in this one transaction: the relation
  // and every relation under it were out of the source for a while, so a
  // recompute then read the source without their rows and writes naming
  // them were no writes of the source. The added half's correction covers
  // that whatever happened while it was out (spec/engine.md "Partitioned
  // and inherited sources"), and the link is recorded anew. The detached
  // half's correction is left out: it recomputes the keys of the same rows,
  // which the added half's recomputes too (or rebuilds), and would list the
  // relation twice under `correcting`.
  TRELLIS_RETURN_IF_ERROR(capture::ForgetRelation(conn, schema, event.source_id, event.relid));
  capture::RelationEvent added = event;
  added.change = capture::RelationChange::kAdded;
  return ApplyChange(conn, schema, transforms.value(), source, added, true, *captured);
}

}  // namespace

Result<int> SyncRelations(pg::Connection& conn, const std::string& schema) {
  auto events = capture::FindRelationChanges(conn, schema);
  if (!events.ok()) return events.status();
  static const auto logger = log::Component("trellis::staging");
  // Relations warned about, so a change that keeps failing is warned of once
  // (then retried quietly) until it is applied. Only the staging worker's
  // thread runs the sync.
  static std::set<std::string> warned;
  int applied = 0;
  for (const auto& event : events.value()) {
    auto tx = pg::Transaction::Begin(conn);
    if (!tx.ok()) return tx.status();
    Status done = Apply(conn, schema, event);
    if (done.ok()) done = tx.value()->Commit();
    if (!done.ok()) {
      // Rolled back with the transaction; the change is found again next
      // round. A busy lock (lock_timeout) is the usual reason and passes;
      // anything else (a partition the engine's role does not own) needs
      // someone to act, and status lists the relation meanwhile.
      if (pg::HasSqlState(done, pg::kLockNotAvailable)) {
        logger->info("relation {} {} under a source: not applied yet ({})", event.node,
                     capture::ChangeName(event.change), done.message());
      } else if (warned.insert(event.node).second) {
        logger->warn(
            "relation {} {} under a source cannot be applied ({}); writes naming it are not "
            "captured until it is (retried every second; capture needs the engine's role to own "
            "the table)",
            event.node, capture::ChangeName(event.change), done.message());
      }
      continue;
    }
    warned.erase(event.node);
    logger->info("relation {} {} under a source{}: capture and targets corrected", event.node,
                 capture::ChangeName(event.change),
                 event.unseen ? " (attached and detached again between two rounds)" : "");
    ++applied;
  }
  TRELLIS_RETURN_IF_ERROR(conn.Exec(sql::WithSchema(R"sql(
DELETE FROM {schema}.corrections c
WHERE NOT EXISTS (SELECT 1 FROM {schema}.pages p WHERE p.id = ANY (c.page_ids)))sql",
                                                    schema)));
  // A relation that left and was dropped since has nothing left to watch.
  TRELLIS_RETURN_IF_ERROR(conn.Exec(sql::WithSchema(R"sql(
DELETE FROM {schema}.left_relations w
WHERE NOT EXISTS (SELECT 1 FROM pg_catalog.pg_class c WHERE c.oid = w.relid))sql",
                                                    schema)));
  return applied;
}

}  // namespace trellis::staging
