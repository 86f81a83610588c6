#include "staging/stage_batch.h"

#include <algorithm>
#include <map>

#include "capture/feed.h"
#include "capture/trigger_feed.h"
#include "catalog/locks.h"
#include "catalog/model.h"
#include "catalog/states.h"
#include "plan/bind.h"
#include "plan/group_deltas.h"
#include "sql/quote.h"
#include "sql/row_reader.h"
#include "staging/failing_readers.h"
#include "staging/ledger_pages.h"
#include "staging/whole_pages.h"
#include "workers/locks.h"
#include "workers/wake_channel.h"
#include "workers/worker_loop.h"

namespace trellis::staging {
namespace {

// SQL true unless transform `id` waits to start its first build: such a
// build reads every input row committed before it starts, and this test
// runs in the staging statement's own snapshot, so a capture row it consumes
// was committed before the build's first range reads. Its pages would be
// work the build does anyway, and done twice: a chain defined back to back
// captured the whole first build of each link (one INSERT of every row) for
// the next, which staged it as pages of every key and drained it again as
// catch-up (bench/README.md, "Stages and FULL JOIN"). A rebuild of a keyed
// target is not skipped: a column rebuild recomputes only its columns.
std::string NotAwaitingFirstBuildSql(const std::string& schema, int id) {
  return catalog::StateSql(
      "NOT EXISTS (SELECT 1 FROM {schema}.transforms WHERE id = " + std::to_string(id) +
          " AND status = {state:waiting_to_backfill} AND NOT key_indexed"
          " AND backfill_started_at IS NULL)",
      schema);
}

// A transform's part of `dirty`, gated by NotAwaitingFirstBuildSql, and
// left out when the batch stages the transform whole (staging/whole_pages.h):
// the conditions name no column of the part, so the planner tests them
// once, before reading any capture row for it.
std::string Gated(const std::string& part, const std::string& schema, int id) {
  return "SELECT * FROM (" + part + ") AS __trellis_part WHERE " +
         NotAwaitingFirstBuildSql(schema, id) + " AND " + NotWholeSql(id);
}

// The staging statement's own parameters; the feed's batch takes those
// from kFirstFeedParam on.
constexpr int kPageKeysParam = 1;
constexpr int kFirstFeedParam = 4;

// One statement: take a batch of captured changes from the feed (the
// trigger feed deletes its capture rows), turn them into pages of at most
// `$1` keys per transform (each page listing the key buckets it covers),
// and report what was consumed and which sources were truncated. A batch
// that consumed rows also notifies the drains of every port ($2, $3:
// workers/wake_channel.h), once per transaction and delivered at its commit
// only: those of this port are nudged in-process besides, and skip it.
Result<std::string> StageSql(const std::string& schema, const capture::FeedBatch& batch,
                             const std::vector<catalog::Transform>& all,
                             const std::set<int>& skipped, const std::set<int>& unfolded,
                             long whole_floor) {
  std::vector<std::string> plain;
  std::vector<std::string> changes;
  std::map<int, size_t> lock_widths;
  std::vector<std::unique_ptr<plan::TransformPlan>> plans;
  std::vector<WholeCandidate> candidates;
  for (const auto& t : all) {
    if (skipped.count(t.id)) continue;  // rebuilt instead (failing_readers.h)
    auto bound = plan::Bind(t, schema);
    if (!bound.ok()) return bound.status();
    plans.push_back(std::move(bound.value()));
    const plan::TransformPlan& plan = *plans.back();
    if (plan.LockWidth() < plan.unit_key().size()) lock_widths[t.id] = plan.LockWidth();
    candidates.push_back(WholeCandidate{&t, &plan, NotAwaitingFirstBuildSql(schema, t.id)});
    // A transform taking deltas: its change rows, whose groups are its page
    // keys (one evaluation of the group expressions).
    // (Unfolded for a transform whose fold fails for a row of this batch:
    // failing_readers.h.)
    if (std::string deltas =
            unfolded.count(t.id) ? plan.UnfoldedDeltaRowsSql() : plan.DeltaRowsSql();
        !deltas.empty()) {
      changes.push_back(Gated(deltas, schema, t.id));
      continue;
    }
    for (const auto& input : plan.DirtyKeySql()) plain.push_back(Gated(input.sql, schema, t.id));
  }
  std::vector<std::string> parts = changes;
  for (const auto& keys : plain) {
    parts.push_back(
        changes.empty()
            ? keys
            : "SELECT transform_id, key, NULL::smallint AS sign, "
              "NULL::xid8 AS xid, NULL::text[] AS row_values, NULL::boolean AS folded FROM (" +
                  keys + ") AS d");
  }
  std::string dirty = sql::Join(parts, "\nUNION ALL\n");
  if (dirty.empty()) dirty = "SELECT NULL::int AS transform_id, NULL::text[] AS key WHERE false";
  return "\nWITH consumed AS (\n  " + batch.TakeSql(kFirstFeedParam, !changes.empty()) +
         "\n), whole AS MATERIALIZED (\n  " + WholeTransformsSql(schema, candidates, whole_floor) +
         "\n), whole_paged AS (\n  " + WholePagesSql(schema) + R"sql(
), dirty AS ()sql" +
         dirty + "\n), " + PageDirtyKeysSql(schema, kPageKeysParam, !changes.empty(), lock_widths) +
         R"sql(
SELECT (SELECT count(*) FROM consumed),
       ARRAY(SELECT DISTINCT source_id FROM consumed WHERE op = 'T'),
       (SELECT count(*) FROM paged) + (SELECT count(*) FROM whole_paged),
       (SELECT pg_notify($2::text, $3::text) WHERE EXISTS (SELECT FROM consumed)),
       ARRAY(SELECT transform_id FROM whole))sql";
}

// One staging transaction. With `find_failing`, the transforms whose
// dirty keys fail over the batch's rows are found first and rebuilt
// instead of staged (failing_readers.h).
Result<StagedBatch> StageOnce(pg::Connection& conn, const std::string& schema,
                              capture::CaptureFeed& feed, int batch_rows, int page_keys,
                              bool find_failing, long whole_floor) {
  auto tx = catalog::BeginStagingBatch(conn, schema);
  if (!tx.ok()) return tx.status();
  auto transforms = catalog::LoadTransforms(conn, schema);
  if (!transforms.ok()) return transforms.status();
  // The feed hands over only committed changes, and a batch it hands over
  // is never handed over again once this transaction commits (the trigger
  // feed deletes its rows as they are consumed: a writer that commits later
  // is simply seen by a later batch, so no cursor can skip past it).
  auto batch = feed.TakeBatch(conn, batch_rows);
  if (!batch.ok()) return batch.status();
  std::set<int> skipped, unfolded;
  if (find_failing) {
    auto failing = FindFailingReaders(conn, schema, *batch.value(), transforms.value(), &unfolded);
    if (!failing.ok()) return failing.status();
    TRELLIS_RETURN_IF_ERROR(
        RebuildFailingReaders(conn, schema, transforms.value(), failing.value()));
    skipped = std::move(failing.value());
  }
  auto stage = StageSql(schema, *batch.value(), transforms.value(), skipped, unfolded, whole_floor);
  if (!stage.ok()) return stage.status();
  pg::Params params = {std::to_string(page_keys), workers::WakeChannel(schema, "drain"),
                       workers::WakeSender()};
  for (auto& p : batch.value()->Params()) params.push_back(std::move(p));
  // Prepared: its text changes only when the set of transforms does.
  auto staged = conn.QueryPrepared(stage.value(), params);
  if (!staged.ok()) return staged.status();
  sql::RowReader row(staged.value(), 0);
  const long consumed = row.Int64(0);
  const std::vector<std::string> truncated = row.TextArray(1);
  const std::vector<std::string> whole = row.TextArray(4);
  if (!row.status().ok()) return row.status();
  for (const auto& source_id : truncated) {
    for (const auto& t : transforms.value()) {
      // Staged whole: the drain's rebuild completes it.
      if (std::find(whole.begin(), whole.end(), std::to_string(t.id)) != whole.end()) continue;
      bool reads = false;
      for (const auto& input : t.inputs)
        reads = reads || std::to_string(input.source.id) == source_id;
      if (!reads) continue;
      // TRUNCATE of any input leaves no keys to recompute, and a transform
      // not staged whole (its first build not done) builds again.
      TRELLIS_RETURN_IF_ERROR(catalog::RequestRebuild(conn, schema, t.id, std::nullopt));
    }
  }
  // Once the capture backlog is read (a batch not full), the recompute
  // snapshots no pending delta can need go: cheap then, and they stay few.
  if (consumed < batch_rows) {
    auto collected =
        conn.QueryPrepared(plan::CollectSnapshotsSql(schema, feed.OldestUnstagedXidSql()));
    if (!collected.ok()) return collected.status();
  }
  TRELLIS_RETURN_IF_ERROR(batch.value()->Staged(conn, consumed));
  TRELLIS_RETURN_IF_ERROR(tx.value()->Commit());
  // The pages are committed: this process's drain workers start on them now
  // (other ports heard the statement's notify at the commit), not after the
  // feed confirms the batch, which for a replication slot is an advance
  // that decodes WAL again from the slot's restart point.
  if (consumed > 0) workers::WorkerLoop::NudgeRole("drain");
  TRELLIS_RETURN_IF_ERROR(batch.value()->Committed(conn));
  StagedBatch out{consumed, false};
  for (const auto& t : transforms.value()) {
    out.catching_up = out.catching_up || t.state == TransformState::kCatchingUp;
  }
  return out;
}

}  // namespace

Result<long> StageOwnWrites(pg::Connection& conn, const std::string& schema,
                            const catalog::Transform& drained, int page_keys) {
  // Cheap first: in logical mode the target's writes go to the slot and
  // there are no capture rows here; a TRUNCATE among them is left to the
  // staging worker's batch, which rebuilds the readers.
  auto own = capture::OwnWritesToStage(conn, schema);
  if (!own.ok()) return own.status();
  if (!own.value()) return 0L;
  TRELLIS_RETURN_IF_ERROR(conn.Exec("SAVEPOINT trellis_own_writes"));
  auto staged = [&]() -> Result<long> {
    // The fence, as a staging batch takes it: no define commits across the
    // load of the transforms below and the pages made from it.
    auto fenced = catalog::TryStagingFenceShared(conn, schema);
    if (!fenced.ok()) return fenced.status();
    if (!fenced.value()) return 0L;
    // Only the readers: a drain of a stage must not read the whole catalog
    // (a fleet's hundreds of transforms) at every hop.
    auto readers = catalog::LoadReadersOf(conn, schema, drained.target_schema, drained.target_name);
    if (!readers.ok()) return readers.status();
    if (readers->empty()) return 0L;
    const auto batch = capture::OwnWritesBatch(schema);
    auto stage = StageSql(schema, *batch, *readers, {}, {}, plan::kWholeFloorVersions);
    if (!stage.ok()) return stage.status();
    pg::Params params = {std::to_string(page_keys), workers::WakeChannel(schema, "drain"),
                         workers::WakeSender()};
    for (auto& p : batch->Params()) params.push_back(std::move(p));
    auto done = conn.QueryPrepared(stage.value(), params);
    if (!done.ok()) return done.status();
    sql::RowReader row(done.value(), 0);
    const long consumed = row.Int64(0);
    if (!row.status().ok()) return row.status();
    return consumed;
  }();
  if (!staged.ok()) {
    // Left to the staging worker, which stages them with the rest (and
    // finds a reader they fail for); a broken connection fails the drain.
    if (conn.broken()) return staged.status();
    TRELLIS_RETURN_IF_ERROR(conn.Exec("ROLLBACK TO SAVEPOINT trellis_own_writes"));
    TRELLIS_RETURN_IF_ERROR(conn.Exec("RELEASE SAVEPOINT trellis_own_writes"));
    return 0L;
  }
  TRELLIS_RETURN_IF_ERROR(conn.Exec("RELEASE SAVEPOINT trellis_own_writes"));
  return staged;
}

Result<StagedBatch> StageBatch(pg::Connection& conn, const std::string& schema, int batch_rows,
                               int page_keys, long whole_floor) {
  const auto feed = capture::CatalogFeed(schema);
  auto staged =
      StageOnce(conn, schema, *feed, batch_rows, page_keys, /*find_failing=*/false, whole_floor);
  // A group expression that fails for a captured row must not stall every
  // transform's staging: the batch is staged again without the transforms
  // it fails for, which are rebuilt instead. Free while nothing fails.
  if (staged.ok() || !MayBeReadersFailure(staged.status())) return staged;
  return StageOnce(conn, schema, *feed, batch_rows, page_keys, /*find_failing=*/true, whole_floor);
}

}  // namespace trellis::staging
