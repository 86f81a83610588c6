#include "reads/status.h"

#include <algorithm>
#include <cstdlib>
#include <variant>

#include "capture/capture_mode.h"
#include "capture/feed.h"
#include "capture/row_security.h"
#include "capture/slot_health.h"
#include "capture/wal_stream.h"
#include "catalog/address.h"
#include "catalog/chains.h"
#include "catalog/composite.h"
#include "catalog/jobs.h"
#include "catalog/migrations.h"
#include "catalog/model.h"
#include "catalog/parts.h"
#include "catalog/states.h"
#include "grammar/address.h"
#include "grammar/render.h"
#include "reads/correcting.h"
#include "reads/part_status.h"
#include "reads/source_index_gaps.h"
#include "sql/quote.h"
#include "sql/row_reader.h"

namespace trellis::reads {

Result<catalog::Transform> LoadNamedTransform(pg::Connection& conn, const std::string& schema,
                                              std::string_view name, bool lock) {
  auto parsed = grammar::ParseTransformName(name);
  if (auto* error = std::get_if<grammar::ParseError>(&parsed)) {
    return Status::Validation("not a transform name: " + error->message);
  }
  const auto& qualified = std::get<grammar::QualifiedName>(parsed);
  auto t = catalog::LoadTransform(conn, schema, qualified.name, lock);
  if (t.ok() && qualified.schema && *qualified.schema != t->target_schema) {
    return Status::NotFound("no transform named " + grammar::RenderQualified(qualified) +
                            " (transform " + grammar::RenderTransformName(t->name()) +
                            " writes to schema " + grammar::RenderName(t->target_schema) + ")");
  }
  if (t.ok()) TRELLIS_RETURN_IF_ERROR(catalog::RefuseHiddenPart(conn, schema, t.value()));
  return t;
}

namespace {

// The drain's last batch of transform `id` and each path's cost, into `s`
// (catalog table batch_paths, drain/path_chooser.h).
Status ReadBatchPaths(pg::Connection& conn, const std::string& schema, int id, TransformStatus& s) {
  auto rows = conn.Query(sql::WithSchema(R"sql(
SELECT path, us_per_row::text, batches, last_rows, last_ms::text,
       (extract(epoch FROM last_at) * 1000000)::bigint, coalesce(last_reason, ''),
       (extract(epoch FROM failed_at) * 1000000)::bigint
FROM {schema}.batch_paths WHERE transform_id = $1::int ORDER BY last_at DESC, path)sql",
                                         schema),
                         {std::to_string(id)});
  if (!rows.ok()) return rows.status();
  for (size_t r = 0; r < rows->size(); ++r) {
    sql::RowReader row(rows.value(), r);
    const int64_t batches = row.Int64(2);
    PathCostStatus cost{row.Text(0), std::strtod(row.Text(1).c_str(), nullptr), batches,
                        row.OptionalInt64(7)};
    // The newest row with a batch is the last batch (a row may record only
    // a failed rebuild).
    if (batches > 0 && !s.last_batch) {
      s.last_batch =
          LastBatchStatus{row.Text(0), row.Int64(3), std::strtod(row.Text(4).c_str(), nullptr),
                          row.Int64(5), row.Text(6)};
    }
    if (!row.status().ok()) return row.status();
    s.path_costs.push_back(std::move(cost));
  }
  std::sort(s.path_costs.begin(), s.path_costs.end(),
            [](const PathCostStatus& a, const PathCostStatus& b) { return a.path < b.path; });
  return Status::OK();
}

// The status of one catalog transform, as stored and read now.
Result<TransformStatus> StatusOf(pg::Connection& conn, const std::string& schema,
                                 const catalog::Transform* t) {
  TransformStatus s;
  s.name = grammar::RenderTransformName(t->name());
  s.target_table = t->target_schema + "." + t->target_name;
  s.status = std::string(WireName(t->state));
  if (t->paused_kind) s.paused_kind = std::string(WireName(*t->paused_kind));
  s.paused_reason = t->paused_reason;
  s.paused_at_us = t->paused_at_us;
  for (const auto& c : t->columns) {
    // A group target's hidden state columns are the engine's, not the user's.
    if (c.role == catalog::ColumnRole::kHidden) continue;
    ColumnStatus column{c.name, std::string(WireName(c.state)), std::nullopt, c.paused_reason};
    if (c.paused_kind) column.paused_kind = std::string(WireName(*c.paused_kind));
    s.columns.push_back(std::move(column));
  }
  s.last_applied_at_us = t->last_applied_at_us;
  auto backlog = conn.Query(
      sql::WithSchema(R"sql(
SELECT (SELECT count(*) FROM {schema}.pages WHERE transform_id = $1::int),
       (SELECT coalesce(sum(key_count), 0) FROM {schema}.pages WHERE transform_id = $1::int),
       (SELECT count(*) FROM ()sql" +
                          capture::CatalogFeed(schema)->UnstagedRowsSql(/*member=*/false) +
                          R"sql() AS __trellis_u WHERE source_id = $2::int),
       (SELECT (extract(epoch FROM backfill_started_at) * 1000000)::bigint
        FROM {schema}.transforms WHERE id = $1::int),
       (SELECT (extract(epoch FROM backfill_finished_at) * 1000000)::bigint
        FROM {schema}.transforms WHERE id = $1::int),
       (SELECT sum(est_rows) FROM {schema}.jobs
        WHERE transform_id = $1::int AND kind IN )sql" +
                          catalog::BuildJobKindsSql() + R"sql(),
       (SELECT count(*) FROM {schema}.held_keys WHERE transform_id = $1::int),
       (SELECT capture_failure FROM {schema}.transforms WHERE id = $1::int),
       (SELECT (extract(epoch FROM capture_failed_at) * 1000000)::bigint
        FROM {schema}.transforms WHERE id = $1::int),
       (SELECT columns FROM {schema}.jobs
        WHERE transform_id = $1::int AND kind = )sql" +
                          sql::Literal(catalog::JobKindName(catalog::JobKind::kColumnRebuild)) +
                          R"sql( LIMIT 1),)sql",
                      schema) +
          "(SELECT " + catalog::CatchUpDrainedSql(schema, "t") + " FROM " + sql::Ident(schema) +
          ".transforms t WHERE t.id = $1::int)",
      {std::to_string(t->id), std::to_string(t->source.id)});
  if (!backlog.ok()) return backlog.status();
  sql::RowReader row(backlog.value(), 0);
  s.backlog_pages = row.Int64(0);
  s.backlog_keys = row.Int64(1);
  s.capture_backlog = row.Int64(2);
  auto capture_mode = capture::CatalogCaptureMode(conn, schema);
  if (!capture_mode.ok()) return capture_mode.status();
  s.capture_mode = capture_mode.value();
  if (s.capture_mode == "logical") {
    // Process-wide: the staging worker of this process, when it runs here.
    if (std::string why = capture::WalStreamFallback(); !why.empty()) {
      s.capture_fallback = std::move(why);
    }
  }
  // A build counts its progress by the estimated rows of the jobs it has
  // left: all of them before it starts, none once it is done.
  if (t->backfill_total) {
    s.backfill.rows_done =
        std::max<int64_t>(0, *t->backfill_total - row.OptionalInt64(5).value_or(0));
  }
  s.backfill.rows_total = t->backfill_total;
  s.backfill.started_at_us = row.OptionalInt64(3);
  s.backfill.finished_at_us = row.OptionalInt64(4);
  s.backfill.columns = row.OptionalTextArray(9);
  s.held_keys = row.Int64(6);
  // Caught up, with the promotion to live left to the staging worker's next
  // round: reported live, as await_converged has already said it is. (Read
  // apart from the status loaded above: the worker may promote it between
  // the two statements.)
  TransformState state = t->state;
  if (state == TransformState::kCatchingUp && row.Text(10) == "t") {
    state = TransformState::kLive;
    s.status = std::string(WireName(state));
  }
  if (auto message = row.OptionalText(7)) {
    s.capture_failure = CaptureFailureStatus{"disruption", row.OptionalInt64(8), *message};
  }
  if (!row.status().ok()) return row.status();
  if (!s.capture_failure) {
    // Logical capture: the slot's and the publication's health.
    auto feed_failure = capture::FeedFailureOf(conn, schema, t->id);
    if (!feed_failure.ok()) return feed_failure.status();
    s.capture_failure = std::move(feed_failure.value());
  }
  auto gaps = ReadSourceIndexGaps(conn, schema, *t);
  if (!gaps.ok()) return gaps.status();
  s.source_index_gaps = std::move(gaps.value());
  auto upstream = catalog::PausedUpstreamColumns(conn, schema, t->id);
  if (!upstream.ok()) return upstream.status();
  s.paused_upstream_columns = std::move(upstream.value());
  // What it reads upstream is not being kept: not live in full.
  if (!s.paused_upstream_columns.empty() && state == TransformState::kLive) {
    s.status = std::string(WireName(TransformState::kCatchingUp));
  }
  auto exposed = capture::FindRowSecurityExposures(conn, schema, t->id);
  if (!exposed.ok()) return exposed.status();
  for (auto& e : exposed.value()) s.row_security_tables.push_back(std::move(e.table));
  auto correcting = ReadCorrecting(conn, schema, t->id);
  if (!correcting.ok()) return correcting.status();
  s.correcting = std::move(correcting.value());
  // A target being corrected for a partition is not live in full yet.
  if (!s.correcting.empty() &&
      (state == TransformState::kLive || state == TransformState::kCatchingUp)) {
    s.status = std::string(WireName(TransformState::kBackfilling));
  }
  TRELLIS_RETURN_IF_ERROR(ReadBatchPaths(conn, schema, t->id, s));
  auto failure = conn.Query(sql::WithSchema(R"sql(
SELECT unit_kind, failure_class, (extract(epoch FROM since) * 1000000)::bigint, attempts,
       sqlstate, message, parts
FROM {schema}.drain_failures WHERE transform_id = $1::int)sql",
                                            schema),
                            {std::to_string(t->id)});
  if (!failure.ok()) return failure.status();
  if (!failure->empty()) {
    sql::RowReader f(failure.value(), 0);
    s.drain_failure = DrainFailureStatus{f.Text(0),         f.Text(1), f.Int64(2),    f.Int64(3),
                                         f.OptionalText(4), f.Text(5), f.TextArray(6)};
    if (!f.status().ok()) return f.status();
  }
  return s;
}

}  // namespace

Result<TransformStatus> ReadStatus(pg::Connection& conn, const std::string& schema,
                                   const std::string& name) {
  // One snapshot for every read below: a grouped join's two parts (and the
  // test of whether their build is under way) read at different instants
  // could pair a group that has not started with a join that has since
  // finished, and read as waiting again in the middle of a build.
  auto tx = pg::Transaction::Begin(conn, "BEGIN ISOLATION LEVEL REPEATABLE READ");
  if (!tx.ok()) return tx.status();
  TRELLIS_RETURN_IF_ERROR(catalog::CheckMigrated(conn, schema));
  auto t = LoadNamedTransform(conn, schema, name);
  if (!t.ok()) return t.status();
  auto s = StatusOf(conn, schema, &t.value());
  if (!s.ok()) return s.status();
  // A transform of stages reads as one transform (catalog/composite.h):
  // each stage folds into it.
  auto whole = catalog::LoadComposite(conn, schema, std::move(t.value()));
  if (!whole.ok()) return whole.status();
  std::vector<std::pair<std::string, ColumnStatus>> stage_quarantine;
  for (const auto& stage : whole->stages) {
    auto part = StatusOf(conn, schema, &stage);
    if (!part.ok()) return part.status();
    for (const auto& c : part->columns) {
      if (c.paused_kind == std::optional<std::string>("quarantine")) {
        stage_quarantine.emplace_back(stage.name(), c);
      }
    }
    auto building =
        conn.Query("SELECT " + catalog::StageBuildsForOwnerSql(schema, "g", "j") +
                       sql::WithSchema(" FROM {schema}.transforms g, {schema}.transforms j "
                                       "WHERE g.id = $1::int AND j.id = $2::int",
                                       schema),
                   {std::to_string(whole->owner.id), std::to_string(stage.id)});
    if (!building.ok()) return building.status();
    // Both rows are gone if a DROP committed since they were loaded.
    const bool pair_building = !building->empty() && building->text(0, 0) == "t";
    const std::string stage_target = part->target_table;
    // Each stage folds in order; the owner's state is by then the worse of
    // itself and the stages before (a three-stage transform reads as one).
    FoldJoinPart(s.value(), std::move(part.value()), stage_target, pair_building);
  }
  // No hidden name reaches the user: a stage's column that a later stage
  // reads is no upstream column of theirs, and one in quarantine (the
  // grouping of a statement with a subquery in HAVING computes the user's
  // columns) shows on the user's column of that name, its reason naming the
  // user's transform (quarantined/1 lists it so too).
  for (const auto& stage : whole->stages) {
    std::erase_if(s->paused_upstream_columns,
                  [&](const std::string& c) { return c.rfind(stage.name() + ".", 0) == 0; });
  }
  for (auto& [hidden, column] : stage_quarantine) {
    for (auto& c : s->columns) {
      if (c.name != column.name || c.state == "paused") continue;
      c.state = column.state;
      c.paused_kind = column.paused_kind;
      c.paused_reason = column.paused_reason;
      if (c.paused_reason) {
        c.paused_reason = catalog::NamedByOwner(*c.paused_reason, hidden, whole->owner.name());
      }
    }
  }
  TRELLIS_RETURN_IF_ERROR(tx.value()->Commit());
  return s;
}

Result<std::vector<Definition>> ReadDefinitions(pg::Connection& conn, const std::string& schema) {
  TRELLIS_RETURN_IF_ERROR(catalog::CheckMigrated(conn, schema));
  // Every transform with its state; a hidden part (a stage: it has an
  // owner) is no row of its own but folds its state into the transform
  // that owns it (catalog/parts.h).
  auto rows = conn.Query(sql::WithSchema(R"sql(
WITH s AS (
  SELECT t.id, t.owner_id, t.stage_order, t.target_schema, t.target_name, t.definition,
         t.created_at, CASE WHEN )sql",
                                         schema) +
                         catalog::CaughtUpSql(schema, "t") +
                         catalog::StateSql(R"sql( THEN {state:live} ELSE status END AS state
  FROM {schema}.transforms t)
SELECT u.target_name, u.target_schema || '.' || u.target_name, u.definition, u.state,
       (extract(epoch FROM u.created_at) * 1000000)::bigint,
       (SELECT array_agg(h.state ORDER BY h.stage_order) FROM s h WHERE h.owner_id = u.id),
       (SELECT array_agg((SELECT )sql",
                                           schema) +
                         catalog::StageBuildsForOwnerSql(schema, "g", "j") +
                         catalog::StateSql(R"sql(
        FROM {schema}.transforms g, {schema}.transforms j WHERE g.id = u.id AND j.id = h.id)
        ORDER BY h.stage_order) FROM s h WHERE h.owner_id = u.id)
FROM s u
WHERE u.owner_id IS NULL ORDER BY u.target_name)sql",
                                           schema));
  if (!rows.ok()) return rows.status();
  std::vector<Definition> out;
  for (size_t r = 0; r < rows->size(); ++r) {
    sql::RowReader row(rows.value(), r);
    std::string state = row.Text(3);
    // Each stage in order folds into the owner's state, as status folds it.
    const auto parts = row.OptionalTextArray(5).value_or(std::vector<std::string>{});
    const auto building = row.OptionalTextArray(6).value_or(std::vector<std::string>{});
    for (size_t i = 0; i < parts.size(); ++i) {
      state = PairState(state, parts[i], i < building.size() && building[i] == "t");
    }
    out.push_back(Definition{grammar::RenderTransformName(row.Text(0)), row.Text(1), row.Text(2),
                             state, row.OptionalInt64(4)});
    if (!row.status().ok()) return row.status();
  }
  return out;
}

Result<bool> HasLiveWorkers(pg::Connection& conn, const std::string& schema,
                            const std::string& role) {
  TRELLIS_RETURN_IF_ERROR(catalog::CheckMigrated(conn, schema));
  auto rows = conn.Query(
      sql::WithSchema("SELECT EXISTS (SELECT 1 FROM {schema}.workers WHERE role = $1 AND "
                      "heartbeat_at > now() - make_interval(secs => $2::int))",
                      schema),
      {role, std::to_string(kLiveWindowSeconds)});
  if (!rows.ok()) return rows.status();
  return rows->text(0, 0) == "t";
}

}  // namespace trellis::reads
