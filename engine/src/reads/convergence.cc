#include "reads/convergence.h"

#include <algorithm>
#include <optional>

#include "capture/feed.h"
#include "capture/relations.h"
#include "catalog/migrations.h"
#include "catalog/states.h"
#include "grammar/address.h"
#include "sql/quote.h"
#include "sql/row_reader.h"
#include "workers/progress.h"

namespace trellis::reads {
namespace {

// A wait looks again as soon as a worker of this process commits work
// (workers/progress.h), and at the latest after this long: work committed
// by another port's workers wakes no one here.
constexpr auto kLookAtLatest = std::chrono::milliseconds(25);
// Drain failures are looked for about this often: a failure is retried
// with backoff from 100 ms, so nothing is gained by looking on every wake.
constexpr auto kCheckBlockedEvery = std::chrono::milliseconds(100);
// A drain failure blocks the wait once it has failed this many times: a
// failure that a concurrent write cures passes at its first retry (100 ms
// later), one that persists reaches this within about a second.
constexpr int kBlockedAfterAttempts = 3;

// A token is the capture feed's watermark (the trigger feed's: a snapshot)
// and, after kBoundMark, the highest transform id committed when it was
// taken: a transform defined after the token (a higher id) is none of the
// token's business, and is left out of every wait. A define
// still running when the token was taken may hold a lower id than one
// committed before it; it is then waited for, which only waits longer.
constexpr char kBoundMark = '@';

// The token's parts; `bound` is empty for a token of an older engine (no
// transform is left out).
struct Token {
  std::string watermark;  // the capture feed's (capture/feed.h)
  std::optional<std::string> bound;
};

Token SplitToken(const std::string& token) {
  const auto mark = token.rfind(kBoundMark);
  if (mark == std::string::npos) return Token{token, std::nullopt};
  return Token{token.substr(0, mark), token.substr(mark + 1)};
}

// The transforms `t` a token covers: not paused (their writes are accounted
// for in their paused state) and defined before the token (its bound, the
// parameter in {bound}; NULL covers every transform).
constexpr std::string_view kCovered =
    "t.status <> {state:paused} AND ({bound}::int IS NULL OR t.id <= {bound}::int)";

// Phase 1: writes committed before the token that the capture feed has not
// staged yet (its {unstaged_before}, over the transforms the token covers),
// and builds that have not finished, of the transforms it covers.
constexpr std::string_view kPendingCapture = R"sql(
SELECT {unstaged_before}
OR EXISTS (
  SELECT 1 FROM {schema}.transforms t
  WHERE {covered} AND t.status IN ({state:waiting_to_backfill}, {state:backfilling})))sql";

// Phase 2: once nothing before the token is left unstaged, every key it
// dirtied sits in a page that exists now; wait until those pages are gone.
// A page can also be completed by handing its work to a build: a rebuild
// that failed on a whole page queues a rebuild job in the transaction that
// deletes the page (drain/rebuild_unit.cc). So a build not finished keeps
// the wait waiting, read in the same statement (one snapshot) as the pages:
// two statements could see the page gone and the job not yet queued.
constexpr std::string_view kLastPage = R"sql(
SELECT coalesce(max(p.id), 0) FROM {schema}.pages p
JOIN {schema}.transforms t ON t.id = p.transform_id WHERE {covered})sql";

constexpr std::string_view kPagesLeft = R"sql(
SELECT EXISTS (SELECT 1 FROM {schema}.pages p
               JOIN {schema}.transforms t ON t.id = p.transform_id
               WHERE {covered} AND p.id <= $1::bigint)
    OR EXISTS (SELECT 1 FROM {schema}.transforms t
               WHERE {covered} AND t.status IN ({state:waiting_to_backfill}, {state:backfilling})))sql";

// Replaces every `slot` in `text` with `value`.
void Fill(std::string& text, const std::string& slot, std::string_view value) {
  for (auto at = text.find(slot); at != std::string::npos;
       at = text.find(slot, at + value.size())) {
    text.replace(at, slot.size(), value);
  }
}

// `sql` with the covered condition in its {covered} slot, the token's bound
// being parameter `bound` ("$2").
std::string Covering(std::string_view sql, const std::string& schema, std::string_view bound) {
  std::string text(sql);
  Fill(text, "{covered}", kCovered);
  Fill(text, "{bound}", bound);
  return catalog::StateSql(text, schema);
}

// A transform the token covers (its bound: $2) that has a drain failure
// open (work that keeps failing with nothing charged, drain/charging.h)
// that failed at least $3 times, and has work the wait is waiting for: a
// build not finished, or a page at or below $1 (phase 2; NULL in phase 1,
// which matches no page). Waiting on it would only wait out the timeout.
// A hidden stage is named by its owner, the transform the user knows.
constexpr std::string_view kBlockedBy = R"sql(
SELECT coalesce(o.target_name, t.target_name), f.unit_kind, f.sqlstate, f.message, f.attempts,
       o.id IS NOT NULL
FROM {schema}.drain_failures f JOIN {schema}.transforms t ON t.id = f.transform_id
LEFT JOIN {schema}.transforms o ON o.id = t.owner_id
WHERE {covered} AND f.attempts >= $3::int
  AND (t.status IN ({state:waiting_to_backfill}, {state:backfilling})
       OR EXISTS (SELECT 1 FROM {schema}.pages p WHERE p.transform_id = t.id AND p.id <= $1::bigint))
ORDER BY t.target_name LIMIT 1)sql";

// The longest chain of transforms: a transform with an input that is another
// transform's target is one level below it. Bounded, so a cycle (which
// define cannot make) could not loop.
constexpr std::string_view kChainDepth = R"sql(
WITH RECURSIVE edge AS (
  SELECT i.transform_id AS down, up.id AS up
  FROM {schema}.transform_inputs i
  JOIN {schema}.sources s ON s.id = i.source_id
  JOIN {schema}.transforms up ON up.target_schema = s.schema_name AND up.target_name = s.table_name
), depth(id, n) AS (
  SELECT id, 1 FROM {schema}.transforms
  UNION ALL
  SELECT edge.down, depth.n + 1 FROM edge JOIN depth ON depth.id = edge.up WHERE depth.n < 32
)
SELECT coalesce(max(n), 1) FROM depth)sql";

// An error naming the transform whose drain failure blocks the wait, or ok.
Status CheckBlocked(pg::Connection& conn, const std::string& schema,
                    const std::optional<std::string>& last_page,
                    const std::optional<std::string>& bound) {
  auto blocked = conn.Query(Covering(kBlockedBy, schema, "$2"),
                            {last_page, bound, std::to_string(kBlockedAfterAttempts)});
  if (!blocked.ok()) return blocked.status();
  if (blocked->empty()) return Status::OK();
  const std::string name = grammar::RenderTransformName(blocked->text(0, 0));
  const auto sqlstate = blocked->at(0, 2);
  Status error = Status::Database(
      "transform " + name + " cannot converge: " +
      (blocked->text(0, 5) == "t" ? "the " + blocked->text(0, 1) + " work of one of its stages"
                                  : "its " + blocked->text(0, 1) + " work") +
      " keeps failing (" + (sqlstate ? *sqlstate + ": " : std::string()) + blocked->text(0, 3) +
      "; " + blocked->text(0, 4) +
      " attempts so far) with nothing charged to a column or key, and is retried with backoff. "
      "Trellis.status/2 shows it as drain_failure; fix the cause, then await again");
  error.sqlstate = sqlstate;
  return error;
}

// Waits until every write committed before `token` has reached the targets
// that read it directly (phases 1 and 2 of spec/engine.md "Convergence").
// `watermark` is the level's token watermark, `bound` the transforms the
// caller's token covers. `wait` sleeps one poll and says whether to go on.
template <typename Wait>
Result<bool> AwaitLevel(pg::Connection& conn, const std::string& schema,
                        const capture::CaptureFeed& feed, const std::string& watermark,
                        const std::optional<std::string>& bound, Wait& wait) {
  // A partition attached (or a child made to inherit) before the token and
  // not captured yet may hold writes capture has not seen: the staging
  // worker captures it and corrects the targets (staging/relation_sync.h).
  // One statement, so one snapshot: the sync captures the relation and
  // requests a rebuild of the readers it does not correct by key in one
  // transaction, and two statements could see the relation in step (sync
  // committed) after seeing no rebuild (not yet committed), and return
  // before the rebuild.
  // The watermark is parameter $1.
  std::string pending_capture(kPendingCapture);
  Fill(pending_capture, "{unstaged_before}", feed.UnstagedBeforeSql("$1", "{covered}"));
  const std::string pending_sql = "SELECT (" + Covering(pending_capture, schema, "$2") + ") OR (" +
                                  capture::RelationsOutOfStepSql(schema) + ")";
  auto checked = std::chrono::steady_clock::now();
  // True once kCheckBlockedEvery has passed since the last check.
  auto check_due = [&] {
    const auto now = std::chrono::steady_clock::now();
    if (now - checked < kCheckBlockedEvery) return false;
    checked = now;
    return true;
  };
  // Prepared, like the last page's and the pages' looks below: a look
  // repeats while the workers apply, and parsing and planning this one
  // took 3-11 ms of every look, latency on every await (bench/README.md
  // "Batch paths").
  while (true) {
    auto pending = conn.QueryPrepared(pending_sql, {watermark, bound});
    if (!pending.ok()) return pending.status();
    if (pending->text(0, 0) == "f") break;
    if (check_due()) {
      TRELLIS_RETURN_IF_ERROR(CheckBlocked(conn, schema, std::nullopt, bound));
    }
    auto more = wait();
    if (!more.ok() || !more.value()) return more;
  }
  auto last = conn.QueryPrepared(Covering(kLastPage, schema, "$1"), {bound});
  if (!last.ok()) return last.status();
  const std::string last_page = last->text(0, 0);
  while (true) {
    auto left = conn.QueryPrepared(Covering(kPagesLeft, schema, "$2"), {last_page, bound});
    if (!left.ok()) return left.status();
    if (left->text(0, 0) == "f") return true;
    if (check_due()) {
      TRELLIS_RETURN_IF_ERROR(CheckBlocked(conn, schema, last_page, bound));
    }
    auto more = wait();
    if (!more.ok() || !more.value()) return more;
  }
}

}  // namespace

Result<std::string> WatermarkToken(pg::Connection& conn, const std::string& schema) {
  TRELLIS_RETURN_IF_ERROR(catalog::CheckMigrated(conn, schema));
  // One statement, so the bound is read in the token's own snapshot.
  const auto feed = capture::CatalogFeed(schema);
  auto rows = conn.Query(sql::WithSchema("SELECT " + feed->WatermarkSql() + " || '" +
                                             std::string(1, kBoundMark) +
                                             "' || coalesce(max(id), 0) FROM {schema}.transforms",
                                         schema));
  if (!rows.ok()) return rows.status();
  return rows->text(0, 0);
}

Result<bool> AwaitConverged(pg::Connection& conn, const std::string& schema,
                            const std::string& token, std::chrono::milliseconds timeout,
                            const std::atomic<bool>& cancelled) {
  TRELLIS_RETURN_IF_ERROR(catalog::CheckMigrated(conn, schema));
  const Token parts = SplitToken(token);
  const auto feed = capture::CatalogFeed(schema);
  auto valid =
      conn.Query("SELECT " + feed->IsWatermarkSql("$1") + " AND ($2::int IS NULL OR $2::int >= 0)",
                 {parts.watermark, parts.bound});
  if (!valid.ok() || valid->text(0, 0) != "t") {
    return Status::Validation(
        "not a watermark token: pass back exactly what watermark_token/1 returned");
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  // The progress seen by the last look: a commit after it (even one while
  // that look's query ran) wakes the next wait at once.
  uint64_t seen = workers::ProgressMark();
  auto wait = [&]() -> Result<bool> {
    if (cancelled.load()) return Status::Timeout("await_converged was cancelled");
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return false;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
    seen = workers::AwaitProgress(seen, std::min(kLookAtLatest, left));
    return true;
  };
  // Level by level: the drains that brought a level's writes into its
  // targets are new writes to the next level's sources, committed after the
  // token. Once a level has settled, a fresh watermark covers them all.
  auto depth = conn.Query(sql::WithSchema(kChainDepth, schema));
  if (!depth.ok()) return depth.status();
  auto deepest = sql::ScalarInt64(depth.value());
  if (!deepest.ok()) return deepest.status();
  const int levels = static_cast<int>(deepest.value());
  std::string level_token = parts.watermark;
  for (int level = 1; level <= levels; ++level) {
    if (level > 1) {
      auto fresh = conn.Query("SELECT " + feed->WatermarkSql());
      if (!fresh.ok()) return fresh.status();
      level_token = fresh->text(0, 0);
    }
    auto settled = AwaitLevel(conn, schema, *feed, level_token, parts.bound, wait);
    if (!settled.ok() || !settled.value()) return settled;
  }
  return true;
}

}  // namespace trellis::reads
