// Session's quarantine reads and release_key (spec/engine.md "Charging a
// failure"). The charging itself runs in the drain workers
// (drain/charging.h); these read what it recorded, and release a held key
// by recomputing it through the same unit executor.
#include "catalog/address.h"
#include "catalog/composite.h"
#include "catalog/migrations.h"
#include "catalog/model.h"
#include "drain/charging.h"
#include "drain/held_keys.h"
#include "drain/page_unit.h"
#include "drain/quarantine.h"
#include "drain/unit_executor.h"
#include "grammar/address.h"
#include "grammar/render.h"
#include "pg/connection.h"
#include "plan/bind.h"
#include "plan/key_sql.h"
#include "reads/status.h"
#include "sql/key_text.h"
#include "sql/quote.h"
#include "sql/row_reader.h"
#include "trellis/engine.h"
#include "workers/locks.h"

namespace trellis {
namespace {

// A quarantine target: a transform, or one of its columns.
using Target = catalog::ResolvedAddress;

// "transform" or "transform.column", as quarantined/1 reports it, read as
// PAUSE/RESUME read an address.
Result<Target> ResolveTarget(pg::Connection& conn, const std::string& schema,
                             const std::string& text) {
  auto parsed = grammar::ParseTransformName(text);
  if (auto* error = std::get_if<grammar::ParseError>(&parsed)) {
    return Status::Validation("not a quarantine target (" + error->message +
                              "): pass \"transform\" or \"transform.column\", as quarantined/1 "
                              "reports it");
  }
  const auto& name = std::get<grammar::QualifiedName>(parsed);
  std::vector<std::string> parts;
  if (name.schema) parts.push_back(*name.schema);
  parts.push_back(name.name);
  // A column in quarantine in a hidden stage is reported, and read back,
  // under its owner's name (catalog::ResolveStageColumn).
  auto stage = catalog::ResolveStageColumn(conn, schema, parts, /*lock=*/false);
  if (!stage.ok()) return stage.status();
  if (stage.value()) return std::move(*stage.value());
  return catalog::ResolveAddress(conn, schema, parts, /*lock=*/false);
}

// The condition that the quarantined_rows row `q` is of a unit key the
// target holds rows under: a record of a key whose rows were deleted since
// is not shown (it fails nowhere now). The key is cast back to its types,
// so the target's key index serves the lookup.
Result<std::string> KeyInTarget(const catalog::Transform& t, const std::string& schema) {
  auto bound = plan::Bind(t, schema);
  if (!bound.ok()) return bound.status();
  const auto& unit = bound.value()->unit_key();
  const std::vector<std::string> recorded = sql::KeyValues("q.key", plan::KeyTypes(unit));
  return "EXISTS (SELECT 1 FROM " + bound.value()->target() + " x WHERE " +
         bound.value()->UnitCovers(plan::KeyNames(unit, "x"), recorded) + ")";
}

Result<std::vector<QuarantineEntry>> ReadEntries(pg::Connection& conn, const std::string& schema,
                                                 const std::optional<Target>& target) {
  pg::Params params{std::nullopt, std::nullopt};
  if (target) {
    params[0] = std::to_string(target->transform.id);
    params[1] = target->column;
  }
  // A hidden stage's columns are listed under its owner's name, as the
  // user knows the transform (catalog/composite.h); a transform's target
  // takes in its stages'.
  auto rows = conn.Query(sql::WithSchema(R"sql(
SELECT coalesce(o.target_name, t.target_name), c.name, coalesce(c.paused_reason, ''),
       (extract(epoch FROM c.paused_at) * 1000000)::bigint, t.id, t.target_name
FROM {schema}.transforms t JOIN {schema}.transform_columns c ON c.transform_id = t.id
LEFT JOIN {schema}.transforms o ON o.id = t.owner_id
WHERE c.state = 'paused' AND c.paused_kind = 'quarantine'
  AND ($1::int IS NULL OR t.id = $1::int OR ($2::text IS NULL AND t.owner_id = $1::int))
  AND ($2::text IS NULL OR c.name = $2::text)
ORDER BY 1, t.owner_id IS NOT NULL, t.stage_order, c.ordinal)sql",
                                         schema),
                         params);
  if (!rows.ok()) return rows.status();
  std::vector<QuarantineEntry> out;
  for (size_t r = 0; r < rows->size(); ++r) {
    sql::RowReader row(rows.value(), r);
    QuarantineEntry e;
    e.transform = grammar::RenderTransformName(row.Text(0));
    e.column = row.Text(1);
    e.target = grammar::RenderAddress(row.Text(0), e.column);
    e.reason = row.Text(2);
    e.since_us = row.OptionalInt64(3);
    const int id = row.Int(4);
    // The reason names the stage's address (to sample, to RESUME): the
    // owner's reaches the same column.
    e.reason = catalog::NamedByOwner(std::move(e.reason), row.Text(5), row.Text(0));
    if (!row.status().ok()) return row.status();
    auto t = catalog::LoadTransformById(conn, schema, id);
    if (!t.ok()) return t.status();
    auto in_target = KeyInTarget(t.value(), schema);
    if (!in_target.ok()) return in_target.status();
    auto count = conn.Query(sql::WithSchema("SELECT count(*) FROM {schema}.quarantined_rows q "
                                            "WHERE q.transform_id = $1::int AND "
                                            "q.column_name = $2 AND ",
                                            schema) +
                                in_target.value(),
                            {std::to_string(id), e.column});
    if (!count.ok()) return count.status();
    auto rows_count = sql::ScalarInt64(count.value());
    if (!rows_count.ok()) return rows_count.status();
    e.rows = rows_count.value();
    out.push_back(std::move(e));
  }
  return out;
}

// The unit key literal $1 cast to the key's types and back to text: the
// key as the plan renders it (1.0 and 1.00 are one key).
std::string CanonicalKeySql(const plan::TransformPlan& p) {
  return "SELECT " + sql::KeyLiteralOf(
                         sql::KeyText(sql::KeyValues("$1::text[]", plan::KeyTypes(p.unit_key()))));
}

// The part of `owner` whose held key `key` is: the owner when it holds it or
// has no stages; else the first of its hidden stages, in stage order, that
// holds it (a statement compiled into stages, spec/engine.md "Stages"): a
// stage's held key is its user's transform's, released by that name, since
// the stage itself cannot be addressed. Each stage reads `key` as its own
// unit key, under a savepoint (a key of other types is no key of it); the
// owner when none holds it, so the caller's errors stay the owner's.
Result<catalog::Transform> HoldingPart(pg::Connection& conn, const std::string& schema,
                                       catalog::Transform owner,
                                       const std::vector<std::optional<std::string>>& key) {
  auto whole = catalog::LoadComposite(conn, schema, owner);
  if (!whole.ok()) return whole.status();
  if (whole->stages.empty()) return owner;
  std::vector<catalog::Transform> parts{whole->owner};
  for (auto& stage : whole->stages) parts.push_back(std::move(stage));
  for (auto& part : parts) {
    auto bound = plan::Bind(part, schema);
    if (!bound.ok()) return bound.status();
    if (bound.value()->unit_key().size() != key.size()) continue;
    TRELLIS_RETURN_IF_ERROR(conn.Exec("SAVEPOINT trellis_release"));
    auto canonical = conn.Query(CanonicalKeySql(*bound.value()), {sql::KeyLiteral(key)});
    if (!canonical.ok()) {
      TRELLIS_RETURN_IF_ERROR(conn.Exec("ROLLBACK TO SAVEPOINT trellis_release"));
      continue;
    }
    TRELLIS_RETURN_IF_ERROR(conn.Exec("RELEASE SAVEPOINT trellis_release"));
    auto held = drain::IsHeld(conn, schema, part.id, canonical->text(0, 0));
    if (!held.ok()) return held.status();
    if (held.value()) return std::move(part);
  }
  return owner;
}

}  // namespace

Result<std::vector<QuarantineEntry>> Session::Quarantined(
    const std::optional<std::string>& target) {
  auto tx = pg::Transaction::Begin(*conn_, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
  if (!tx.ok()) return tx.status();
  TRELLIS_RETURN_IF_ERROR(CheckMigrated());
  std::optional<Target> resolved;
  if (target) {
    auto r = ResolveTarget(*conn_, options_.schema, *target);
    if (!r.ok()) return r.status();
    resolved = std::move(r.value());
  }
  auto entries = ReadEntries(*conn_, options_.schema, resolved);
  if (!entries.ok()) return entries.status();
  TRELLIS_RETURN_IF_ERROR(tx.value()->Commit());
  return entries;
}

Result<SamplePage> Session::SampleQuarantined(const std::string& target, int64_t limit,
                                              const std::optional<std::string>& cursor) {
  if (limit < 1 || limit > kMaxSampleLimit) {
    return Status::Validation("limit must be between 1 and " + std::to_string(kMaxSampleLimit));
  }
  auto tx = pg::Transaction::Begin(*conn_, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
  if (!tx.ok()) return tx.status();
  TRELLIS_RETURN_IF_ERROR(CheckMigrated());
  auto resolved = ResolveTarget(*conn_, options_.schema, target);
  if (!resolved.ok()) return resolved.status();
  auto in_target = KeyInTarget(resolved->transform, options_.schema);
  if (!in_target.ok()) return in_target.status();
  // The cursor is the last row's (column, key) as a text[]: opaque to the
  // caller, checked here so a wrong one is a validation error.
  if (cursor) {
    auto valid = conn_->Query(
        "SELECT cardinality($1::text[]) = 2 AND ($1::text[])[2]::text[] IS NOT NULL", {*cursor});
    if (!valid.ok() || valid->text(0, 0) != "t") {
      return Status::Validation(
          "not a sample_quarantined cursor: pass back the next_cursor the previous page "
          "returned, or no cursor for the first page");
    }
  }
  auto rows = conn_->Query(
      sql::WithSchema(R"sql(
SELECT q.column_name, q.key,
       ARRAY(SELECT e.key FROM jsonb_each_text(q.input_values) e ORDER BY e.key),
       ARRAY(SELECT coalesce(e.value, '') FROM jsonb_each_text(q.input_values) e ORDER BY e.key),
       ARRAY(SELECT (e.value IS NULL)::text FROM jsonb_each_text(q.input_values) e ORDER BY e.key),
       q.sqlstate, q.error, (extract(epoch FROM q.since) * 1000000)::bigint,
       ARRAY[q.column_name, q.key::text]::text
FROM {schema}.quarantined_rows q
JOIN {schema}.transform_columns c ON c.transform_id = q.transform_id AND c.name = q.column_name
WHERE q.transform_id = $1::int AND ($2::text IS NULL OR q.column_name = $2::text)
  AND c.state = 'paused' AND c.paused_kind = 'quarantine'
  AND ($3::text IS NULL OR (q.column_name, q.key) > (($3::text[])[1], (($3::text[])[2])::text[]))
  AND )sql",
                      options_.schema) +
          in_target.value() + R"sql(
ORDER BY q.column_name, q.key
LIMIT $4::int + 1)sql",
      {std::to_string(resolved->transform.id), resolved->column, cursor, std::to_string(limit)});
  if (!rows.ok()) return rows.status();
  SamplePage page;
  auto shown = catalog::ShownName(*conn_, options_.schema, resolved->transform);
  if (!shown.ok()) return shown.status();
  const std::string name = shown.value();
  for (size_t r = 0; r < rows->size() && static_cast<int64_t>(r) < limit; ++r) {
    sql::RowReader row(rows.value(), r);
    QuarantineSample s;
    s.target = grammar::RenderAddress(name, row.Text(0));
    s.key = row.TextArray(1);
    const auto names = row.TextArray(2);
    const auto values = row.TextArray(3);
    const auto nulls = row.TextArray(4);
    for (size_t i = 0; i < names.size() && i < values.size() && i < nulls.size(); ++i) {
      s.inputs.emplace_back(
          names[i], nulls[i] == "true" ? std::nullopt : std::optional<std::string>(values[i]));
    }
    s.sqlstate = row.OptionalText(5);
    s.error = row.Text(6);
    s.since_us = row.Int64(7);
    if (!row.status().ok()) return row.status();
    page.samples.push_back(std::move(s));
    if (static_cast<int64_t>(r) + 1 == limit && rows->size() > static_cast<size_t>(limit)) {
      page.next_cursor = row.Text(8);
    }
  }
  TRELLIS_RETURN_IF_ERROR(tx.value()->Commit());
  return page;
}

Status Session::ReleaseKey(const std::string& transform,
                           const std::vector<std::optional<std::string>>& key) {
  auto tx = pg::Transaction::Begin(*conn_);
  if (!tx.ok()) return tx.status();
  TRELLIS_RETURN_IF_ERROR(CheckMigrated());
  auto named = reads::LoadNamedTransform(*conn_, options_.schema, transform);
  if (!named.ok()) return named.status();
  // Every message names the user's transform, also for a key one of its
  // hidden stages holds.
  const std::string name = grammar::RenderTransformName(named->name());
  auto t = HoldingPart(*conn_, options_.schema, std::move(named.value()), key);
  if (!t.ok()) return t.status();
  // Keys are held by unit key (plan/transform_plan.h).
  auto first = plan::Bind(t.value(), options_.schema);
  if (!first.ok()) return first.status();
  const size_t width = first.value()->unit_key().size();
  if (key.size() != width) {
    return Status::Validation("transform " + name + " is keyed by " + std::to_string(width) +
                              " column(s); the key given has " + std::to_string(key.size()) +
                              " value(s)");
  }
  if (t->state == TransformState::kPaused) {
    return Status::Validation("transform " + name + " is paused: RESUME TRANSFORM " + name +
                              " first (a RESUME that rebuilds recomputes every held key)");
  }
  if (!t->key_indexed) {
    return Status::Validation("transform " + name +
                              " is still in its first build: release its keys once it is built");
  }
  // No drain of the transform runs while the key is recomputed here (drains
  // take this lock shared), so the release cannot race a drain of the key.
  TRELLIS_RETURN_IF_ERROR(
      conn_->Exec("SELECT pg_advisory_xact_lock(" + workers::TransformLockSpace() + ", $2::int)",
                  {options_.schema, std::to_string(t->id)}));
  // Loaded again under the lock: an ALTER TRANSFORM takes it exclusively
  // before it changes the columns, and one that committed after the load
  // above would leave a plan naming a dropped column.
  t = catalog::LoadTransformById(*conn_, options_.schema, t->id);
  if (!t.ok()) return t.status();
  auto bound = plan::Bind(t.value(), options_.schema);
  if (!bound.ok()) return bound.status();
  // The key as the plan renders it (1.0 and 1.00 are one key).
  auto canonical = conn_->Query(CanonicalKeySql(*bound.value()), {sql::KeyLiteral(key)});
  if (!canonical.ok()) {
    return Status::Validation("the key given is not a key of transform " + name + ": " +
                              canonical.status().message());
  }
  const std::string literal = canonical->text(0, 0);
  auto dropped = drain::DropHold(*conn_, options_.schema, t->id, literal);
  if (!dropped.ok()) return dropped.status();
  if (!dropped.value()) {
    return Status::NotFound("transform " + name + " holds no key " + literal +
                            " (status/2 counts the keys it holds)");
  }
  auto hook = drain::MakeChargingHook();
  drain::UnitExecutor executor(*hook);
  drain::KeysUnit unit(*bound.value(), {literal});
  auto ran = executor.Run(*conn_, options_.schema, t.value(), unit);
  if (!ran.ok()) return ran.status();
  if (ran->outcome != drain::UnitOutcome::kApplied) {
    // Not a failure of the key (a privilege, a schema change): rolled back,
    // so the key stays held as it was.
    return ran->error;
  }
  auto held = drain::IsHeld(*conn_, options_.schema, t->id, literal);
  if (!held.ok()) return held.status();
  TRELLIS_RETURN_IF_ERROR(tx.value()->Commit());
  if (!held.value()) return Status::OK();
  Status error = Status::Database("key " + literal + " of transform " + name +
                                  " failed again and stays held: " + ran->error.message() +
                                  "; fix the cause, then release it again");
  error.sqlstate = ran->error.sqlstate;
  return error;
}

}  // namespace trellis
