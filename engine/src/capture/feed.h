// Capture feeds: where staging gets the changes writers committed, how the
// health of capture is checked, and what a watermark is (spec/engine.md
// "Capture feeds"). Staging, convergence, status, self-check and the
// disruption check reach captured changes only through this interface;
// which feed a catalog captures with is decided in one place, CatalogFeed.
//
// The trigger feed (capture/trigger_feed.h) is the first: statement
// triggers write one row per statement into the catalog's capture table,
// in the writer's transaction. A feed reading a logical replication slot
// is the second (issue 28); the comments below say what each operation
// asks of it.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "capture/disruption.h"
#include "pg/connection.h"
#include "trellis/status.h"

namespace trellis::capture {

// One staging batch of a feed: the captured changes one staging
// transaction turns into ledger pages. Taken inside that transaction
// (after the staging fence) and used only there.
// Thread-safety: not thread-safe; one staging transaction's.
class FeedBatch {
 public:
  virtual ~FeedBatch() = default;

  // The body of the staging statement's CTE `consumed`
  // (capture/consumed_rows.h has its columns) that takes this batch's rows:
  // once the staging transaction commits they are never delivered again.
  // Its parameters are Params(), numbered from `$first_param`. `member`:
  // compute consumed.member (a transform takes deltas).
  virtual std::string TakeSql(int first_param, bool member) const = 0;

  // The same columns over this batch's rows (or a superset of them), read
  // only: what staging tries each transform's readers on when one fails
  // (staging/failing_readers.h). Parameters as TakeSql's.
  virtual std::string PeekSql(int first_param, bool member) const = 0;

  // The parameters of TakeSql and PeekSql, in order.
  virtual pg::Params Params() const = 0;

  // Called in the staging transaction after its statement took the batch
  // (`taken` rows): what the feed must record in the same transaction (a
  // slot-reading feed: the position it has staged through, so that a crash
  // before the slot is confirmed skips what was staged).
  [[nodiscard]] virtual Status Staged(pg::Connection& conn, long taken) = 0;

  // Called after the staging transaction committed (a slot-reading feed:
  // confirm the position to the server, which may then free the WAL). A
  // failure here loses nothing: the position recorded by Staged is the
  // truth, and the next batch confirms again.
  [[nodiscard]] virtual Status Committed(pg::Connection& conn) = 0;
};

// A catalog's source of captured changes. The SQL fragments it returns
// have the catalog schema filled in and are stable for a given feed, so
// statements built from them can be prepared once.
// Thread-safety: const methods are safe from any thread; the others take
// the caller's connection and run on the caller's thread.
class CaptureFeed {
 public:
  virtual ~CaptureFeed() = default;

  // ---- Staging ----

  // The next batch of at most `max_rows` captured changes, in the staging
  // transaction. REQUIRES: the staging transaction is open and holds the
  // staging fence (catalog/locks.h).
  virtual Result<std::unique_ptr<FeedBatch>> TakeBatch(pg::Connection& conn, int max_rows) = 0;

  // A SELECT with the columns of `consumed` over every captured change that
  // SQL can see and staging has not taken yet, read only, in no order:
  // status counts a source's backlog over it, self-check runs a plan's
  // dirty keys over it (keys with work pending) and looks for a TRUNCATE
  // in it. `member` as in FeedBatch::TakeSql.
  virtual std::string UnstagedRowsSql(bool member) const = 0;

  // A scalar SELECT (xid8, NULL when none) at or below the transaction id
  // of every writer whose changes staging may still take: a recompute's
  // snapshot record whose xmax is at or below it can no longer be needed
  // by a delta (plan/group_deltas.h CollectSnapshotsSql).
  virtual std::string OldestUnstagedXidSql() const = 0;

  // ---- Health ----

  // Finds every source a transform reads whose capture was changed outside
  // Trellis so that writes may have been missed, pauses its readers
  // (kind "disruption", capture/disruption.h) and returns what it found.
  // REQUIRES: inside a transaction.
  virtual Result<std::vector<Disruption>> PauseDisruptedReaders(pg::Connection& conn) = 0;

  // ---- Watermarks (reads/convergence.h) ----

  // A text SQL expression: the feed's watermark now. Every write committed
  // before the statement that evaluates it is "before" the watermark.
  virtual std::string WatermarkSql() const = 0;

  // A boolean SQL expression: the text parameter `param` ("$1") is a
  // watermark of this feed (false or NULL otherwise).
  virtual std::string IsWatermarkSql(std::string_view param) const = 0;

  // A boolean SQL expression, true while some write before the watermark in
  // `param` (text) is not staged yet for a transform `t` (an alias of the
  // catalog's transforms) for which `covered` (a condition over `t`) holds.
  // A feed that cannot tell sources apart may ignore `covered`: it only
  // waits longer.
  virtual std::string UnstagedBeforeSql(std::string_view param, std::string_view covered) const = 0;
};

// The feed catalog `schema` captures with. Every caller asks here, so the
// choice of feed is made once: today always the trigger feed; with a second
// feed, the catalog records which one is in use (all ports of a catalog
// must agree on it) and this reads it.
std::unique_ptr<CaptureFeed> CatalogFeed(const std::string& schema);

}  // namespace trellis::capture
