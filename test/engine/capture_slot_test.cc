// The replication slot of a catalog captured by logical decoding
// (capture/slot.h, capture/slot_health.h, capture/logical_feed.h) against a
// real --logical testkit cluster: made with the first transform, advanced to
// what staging committed, dropped with the last transform; a slot dropped by
// hand, a publication altered by hand and a consumer that stopped are each
// reported as status/2 does and repaired by the staging worker's round; and a
// commit that straddles the flush position a read stopped at is staged once,
// even when the port dies before the slot's advance.
//
// Its own executable (not engine_test): it needs a cluster with
// wal_level = logical, and one test changes the server's wal_writer_delay.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <thread>

#include "capture/feed.h"

#include "capture/logical_feed.h"
#include "capture/slot.h"
#include "capture/slot_health.h"
#include "capture/wal_stream.h"
#include "catalog/locks.h"
#include "pg/connection.h"
#include "staging/stage_batch.h"
#include "throwaway_cluster.h"
#include "trellis/engine.h"
#include "trellis/engine_metrics.h"
#include "trellis/workers.h"

namespace trellis::capture {
namespace {

test::ThrowawayCluster& Cluster() {
  static test::ThrowawayCluster cluster(TRELLIS_TESTKIT_BINARY, {"--logical"});
  return cluster;
}

// A fresh database with table t (id, v) and, in a catalog capturing by
// logical decoding, the projection t_copy over it, built.
class LogicalDb {
 public:
  LogicalDb() {
    static std::atomic<int> n{0};
    auto admin = pg::Connection::Open(Cluster().url(), "capture_slot_test");
    REQUIRE(admin.ok());
    const std::string db = "capture_slot_" + std::to_string(n.fetch_add(1));
    REQUIRE(admin.value()->Exec("CREATE DATABASE " + db).ok());
    options_.url = Cluster().UrlFor(db);
    options_.schema = "trellis";
    options_.capture_mode = "logical";
    conn_ = Open();
    Sql("CREATE TABLE t (id int PRIMARY KEY, v int)");
    Sql("INSERT INTO t SELECT g, g FROM generate_series(1, 10) g");
    auto s = Session::Open(options_);
    REQUIRE(s.ok());
    session_ = std::move(s.value());
    REQUIRE(session_->Migrate().ok());
    auto mode = session_->EnsureCaptureMode();
    REQUIRE(mode.ok());
    REQUIRE(mode.value() == "logical");
    Define();
  }

  void Define() {
    auto applied = session_->Apply("TRANSFORM t_copy FROM t SELECT v AS v", true);
    INFO((applied.ok() ? "" : applied.status().ToString()));
    REQUIRE(applied.ok());
    auto workers = BackgroundWorkers::Start(options_, true, 1);
    AwaitConverged();
  }

  void AwaitConverged() {
    auto token = session_->WatermarkToken();
    REQUIRE(token.ok());
    auto done = session_->AwaitConverged(token.value(), std::chrono::seconds(60));
    INFO((done.ok() ? "" : done.status().ToString()));
    REQUIRE(done.ok());
    REQUIRE(done.value());
  }

  std::unique_ptr<pg::Connection> Open() const {
    auto conn = pg::Connection::Open(options_.url, "capture_slot_test");
    REQUIRE(conn.ok());
    return std::move(conn.value());
  }

  void Sql(const std::string& statement) {
    const Status done = conn_->ExecScript(statement);
    INFO(statement << " -> " << done.ToString());
    REQUIRE(done.ok());
  }

  std::string Scalar(const std::string& query) {
    auto rows = conn_->Query(query);
    INFO(query << " -> " << (rows.ok() ? "" : rows.status().ToString()));
    REQUIRE(rows.ok());
    REQUIRE(rows->size() == 1);
    return rows->at(0, 0).value_or("NULL");
  }

  std::string Slot() { return Scalar("SELECT coalesce(slot_name, '') FROM trellis.capture_feed"); }
  int TransformId() { return std::stoi(Scalar("SELECT id FROM trellis.transforms")); }

  std::optional<std::string> FailureKind() {
    auto failure = FeedFailureOf(*conn_, "trellis", TransformId());
    REQUIRE(failure.ok());
    if (!failure.value()) return std::nullopt;
    return failure.value()->kind;
  }

  // One staging batch as the staging worker runs it; returns the rows taken.
  long Stage(pg::Connection& stager) {
    auto staged = staging::StageBatch(stager, "trellis", 500, 1000);
    INFO((staged.ok() ? "" : staged.status().ToString()));
    REQUIRE(staged.ok());
    return staged->consumed;
  }

  const ConnectOptions& options() const { return options_; }
  Session& session() { return *session_; }
  pg::Connection& conn() { return *conn_; }

 private:
  ConnectOptions options_;
  std::unique_ptr<pg::Connection> conn_;
  std::unique_ptr<Session> session_;
};

uint64_t Lsn(const std::string& text) {
  auto lsn = ParseLsn(text);
  REQUIRE(lsn);
  return *lsn;
}

TEST_CASE(
    "the slot is made with the first transform, advanced after staging, dropped with the "
    "last",
    "[logical][slot]") {
  LogicalDb db;
  const std::string slot = db.Slot();
  REQUIRE(!slot.empty());
  CHECK(SlotExists(db.conn(), slot).value());
  CHECK(db.Scalar("SELECT string_agg(tablename, ',' ORDER BY tablename) FROM "
                  "pg_publication_tables WHERE pubname = '" +
                  slot + "'") == "capture_marks,t");

  // Staging records how far it staged and then advances the slot there.
  auto stager = db.Open();
  db.Sql("SET synchronous_commit = on; INSERT INTO t VALUES (11, 11)");
  long taken = 0;
  for (int i = 0; i < 20 && taken == 0; ++i) taken += db.Stage(*stager);
  CHECK(taken == 1);
  const std::string staged = db.Scalar("SELECT staged_lsn::text FROM trellis.capture_feed");
  CHECK(db.Scalar("SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = '" +
                  slot + "'") == staged);
  // Nothing new: the batch takes nothing.
  CHECK(db.Stage(*stager) == 0);

  // The last transform dropped: slot and publication go, the mode stays.
  REQUIRE(db.session().Apply("PAUSE TRANSFORM t_copy", false).ok());
  auto dropped = db.session().Apply("DROP TRANSFORM t_copy", false);
  INFO((dropped.ok() ? "" : dropped.status().ToString()));
  REQUIRE(dropped.ok());
  CHECK(!SlotExists(db.conn(), slot).value());
  CHECK(db.Scalar("SELECT count(*) FROM pg_publication WHERE pubname = '" + slot + "'") == "0");
  CHECK(db.Scalar("SELECT mode || ',' || (slot_name IS NULL) FROM trellis.capture_feed") ==
        "logical,true");
  CHECK(DropSlotIfUnused(db.conn(), "trellis").value() == false);

  // The next define makes them again, and its writes flow.
  db.Define();
  CHECK(db.Slot() == slot);
  CHECK(SlotExists(db.conn(), slot).value());
  db.Sql("INSERT INTO t VALUES (12, 12)");
  {
    auto workers = BackgroundWorkers::Start(db.options(), true, 1);
    db.AwaitConverged();
  }
  CHECK(db.Scalar("SELECT count(*) FROM t_copy") == "12");
}

TEST_CASE("a slot dropped by hand is slot_lost until the round makes a new one and rebuilds",
          "[logical][slot][health]") {
  LogicalDb db;
  const std::string slot = db.Slot();
  CHECK(!db.FailureKind());
  db.Sql("SELECT pg_drop_replication_slot('" + slot + "')");
  auto health = ReadFeedHealth(db.conn(), "trellis");
  REQUIRE(health.ok());
  REQUIRE(health->lost);
  CHECK(health->lost->find("dropped outside Trellis") != std::string::npos);
  CHECK(db.FailureKind() == std::string(kSlotLost));
  auto status = db.session().ReadStatus("t_copy");
  REQUIRE(status.ok());
  REQUIRE(status->capture_failure);
  CHECK(status->capture_failure->kind == kSlotLost);

  const uint64_t replaced = GlobalEngineMetrics().slots_replaced.load();
  SlotTending tending;
  REQUIRE(TendSlot(db.conn(), "trellis", tending).ok());
  CHECK(GlobalEngineMetrics().slots_replaced.load() == replaced + 1);
  CHECK(SlotExists(db.conn(), slot).value());
  CHECK(!db.FailureKind());
  // What the old slot held is gone: the transform rebuilds, from no position.
  CHECK(db.Scalar("SELECT string_agg(kind, ',') FROM trellis.jobs") == "rebuild");
  CHECK(db.Scalar("SELECT staged_lsn IS NULL FROM trellis.capture_feed") == "t");

  // Writes after it flow, the rebuild included.
  db.Sql("INSERT INTO t VALUES (11, 11)");
  auto workers = BackgroundWorkers::Start(db.options(), true, 1);
  db.AwaitConverged();
  CHECK(db.Scalar("SELECT count(*) FROM t_copy") == "11");
}

TEST_CASE("a publication altered by hand is publication_altered until the round publishes again",
          "[logical][slot][health]") {
  LogicalDb db;
  const std::string slot = db.Slot();
  db.Sql("ALTER PUBLICATION " + slot + " DROP TABLE t");
  auto health = ReadFeedHealth(db.conn(), "trellis");
  REQUIRE(health.ok());
  CHECK(!health->lost);
  CHECK(health->altered_tables == std::vector<std::string>{"public.t"});
  CHECK(db.FailureKind() == std::string(kPublicationAltered));

  // A write while the table is out is not decoded: the readers rebuild.
  db.Sql("INSERT INTO t VALUES (11, 11)");
  const uint64_t repairs = GlobalEngineMetrics().publication_repairs.load();
  SlotTending tending;
  REQUIRE(TendSlot(db.conn(), "trellis", tending).ok());
  CHECK(GlobalEngineMetrics().publication_repairs.load() == repairs + 1);
  CHECK(db.Scalar("SELECT count(*) FROM pg_publication_tables WHERE pubname = '" + slot +
                  "' AND tablename = 't'") == "1");
  CHECK(!db.FailureKind());
  CHECK(db.Scalar("SELECT string_agg(kind, ',') FROM trellis.jobs") == "rebuild");
  auto workers = BackgroundWorkers::Start(db.options(), true, 1);
  db.AwaitConverged();
  CHECK(db.Scalar("SELECT count(*) FROM t_copy") == "11");
}

TEST_CASE("a consumer that stopped reading is slot_behind while there is WAL to read",
          "[logical][slot][health]") {
  LogicalDb db;
  CHECK(!db.FailureKind());
  // The staged position last moved a minute ago and a write waits past it.
  db.Sql("UPDATE trellis.capture_feed SET staged_at = now() - interval '60 seconds'");
  db.Sql("SET synchronous_commit = on; INSERT INTO t VALUES (11, 11)");
  auto health = ReadFeedHealth(db.conn(), "trellis");
  REQUIRE(health.ok());
  CHECK(health->lag_bytes > 0);
  CHECK(health->lag_seconds >= kBehindSeconds);
  REQUIRE(health->behind);
  CHECK(health->behind->find("Connect a handle with staging: true") != std::string::npos);
  CHECK(db.FailureKind() == std::string(kSlotBehind));
  auto status = db.session().ReadStatus("t_copy");
  REQUIRE(status.ok());
  REQUIRE(status->capture_failure);
  CHECK(status->capture_failure->kind == kSlotBehind);
  CHECK(status->capture_failure->since_us.has_value());

  // Staging reads the slot again: the failure clears.
  auto stager = db.Open();
  for (int i = 0; i < 20 && db.FailureKind(); ++i) {
    db.Stage(*stager);
    std::this_thread::sleep_for(std::chrono::milliseconds(60));
  }
  CHECK(!db.FailureKind());
}

TEST_CASE("a batch with nothing flushed past the staged position does not read the slot",
          "[logical][slot]") {
  LogicalDb db;
  auto stager = db.Open();
  REQUIRE(stager->Exec("SET synchronous_commit = off").ok());
  // Asynchronous commits reach the disk only when the walwriter runs, every
  // 2 s here: meanwhile the flush position stays where a batch read it.
  db.Sql("ALTER SYSTEM SET wal_writer_delay = '2s'");
  db.Sql("SELECT pg_reload_conf()");
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  db.Sql("SET synchronous_commit = on; INSERT INTO t VALUES (11, 11)");
  long taken = 0;
  for (int i = 0; i < 20 && taken == 0; ++i) taken += db.Stage(*stager);
  REQUIRE(taken == 1);
  const std::string staged = db.Scalar("SELECT staged_lsn::text FROM trellis.capture_feed");
  const std::string flushed = db.Scalar("SELECT pg_current_wal_flush_lsn()::text");
  INFO("staged " << staged << ", flushed " << flushed);
  if (Lsn(flushed) <= Lsn(staged)) {
    // A read now would fail: the slot of that name is a physical one. The
    // batch must not read at all.
    const std::string slot = db.Slot();
    db.Sql("SELECT pg_drop_replication_slot('" + slot + "')");
    db.Sql("SELECT pg_create_physical_replication_slot('" + slot + "')");
    CHECK(db.Stage(*stager) == 0);
    db.Sql("SELECT pg_drop_replication_slot('" + slot + "')");
  } else {
    WARN("the flush passed the staged position before the check: not checked this run");
  }
  db.Sql("ALTER SYSTEM RESET wal_writer_delay");
  db.Sql("SELECT pg_reload_conf()");
}

// The byte distance from `lsn` to the next WAL page boundary.
uint64_t ToPageEnd(uint64_t lsn) { return 8192 - lsn % 8192; }

TEST_CASE(
    "a commit straddling the flush position a read stopped at is staged once, even when "
    "the slot's advance is lost",
    "[logical][slot][exactly_once]") {
  LogicalDb db;
  auto stager = db.Open();
  // The workers' setting: their commits do not wait for the disk.
  REQUIRE(stager->Exec("SET synchronous_commit = off").ok());
  for (int i = 0; i < 5; ++i) db.Stage(*stager);
  const std::string slot = db.Slot();
  // The walwriter flushes an asynchronous commit's WAL up to the last whole
  // page first and the rest a wal_writer_delay later: with 2 s, the flush
  // position stays inside a commit record that crosses a page for ~2 s.
  db.Sql("ALTER SYSTEM SET wal_writer_delay = '2s'");
  db.Sql("SELECT pg_reload_conf()");
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  auto writer = db.Open();
  REQUIRE(writer->Exec("SET synchronous_commit = off").ok());
  auto lsn_of = [&](pg::Connection& c, const std::string& what) {
    auto rows = c.Query("SELECT " + what + "::text");
    REQUIRE(rows.ok());
    return Lsn(rows->text(0, 0));
  };

  bool straddled = false;
  for (int attempt = 0; attempt < 10 && !straddled; ++attempt) {
    // Everything before is staged, and a copy of the slot as it is now
    // stands for the slot of a port killed before its advance.
    for (int i = 0; i < 50 && lsn_of(db.conn(), "pg_current_wal_flush_lsn()") <
                                  lsn_of(db.conn(), "pg_current_wal_insert_lsn()");
         ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    while (db.Stage(*stager) > 0) {
    }
    db.Sql(
        "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name "
        "= '" +
        slot + "_copy'");
    db.Sql("SELECT pg_copy_logical_replication_slot('" + slot + "', '" + slot + "_copy')");

    // One row written, then WAL padded (a message no publication decodes)
    // until the commit record cannot fit in what is left of the page.
    REQUIRE(writer->Exec("BEGIN").ok());
    REQUIRE(writer->Exec("INSERT INTO t VALUES (100 + " + std::to_string(attempt) + ", 0)").ok());
    auto in_range = [](uint64_t left) { return left >= 8 && left <= 32; };
    uint64_t at = lsn_of(*writer, "pg_current_wal_insert_lsn()");
    std::optional<uint64_t> overhead;  // bytes a message record adds to its payload
    for (int pad = 0; pad < 30 && !in_range(ToPageEnd(at)); ++pad) {
      const uint64_t left = ToPageEnd(at);
      uint64_t size = left + 200;  // past the page's end
      if (left > 400) {
        size = left - 300;  // to ~300 bytes before it, measuring the overhead
      } else if (overhead && left > *overhead + 24) {
        size = left - *overhead - 16;  // records are 8-aligned: 16 bytes are left
      }
      REQUIRE(writer
                  ->Exec("SELECT pg_logical_emit_message(false, 'pad', repeat('x', " +
                         std::to_string(size) + "))")
                  .ok());
      const uint64_t now = lsn_of(*writer, "pg_current_wal_insert_lsn()");
      if (!overhead && now > at && now - at < left) overhead = (now - at) - size;
      at = now;
    }
    if (!(ToPageEnd(at) >= 8 && ToPageEnd(at) <= 32)) {
      REQUIRE(writer->Exec("ROLLBACK").ok());
      continue;
    }
    const uint64_t page_end = at + ToPageEnd(at);
    REQUIRE(writer->Exec("COMMIT").ok());
    // The walwriter flushes up to the page's end, inside the commit record.
    uint64_t flushed = 0;
    for (int i = 0; i < 60; ++i) {
      flushed = lsn_of(db.conn(), "pg_current_wal_flush_lsn()");
      if (flushed >= page_end) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (flushed != page_end) continue;  // flushed past it already: again
    // The batch reads the flush LSN (mid-record) as its bound; the server
    // decodes the commit record that crosses it and hands the transaction
    // over. Then the port "dies" before its advance: the catalog's slot is
    // the copy, still before that transaction.
    const long taken = db.Stage(*stager);
    REQUIRE(taken >= 1);
    straddled = true;
    db.Sql("UPDATE trellis.capture_feed SET slot_name = '" + slot + "_copy'");
    // The copy hands the staged transactions over again; none may be taken.
    CHECK(db.Stage(*stager) == 0);
    db.Sql("UPDATE trellis.capture_feed SET slot_name = '" + slot + "'");
  }
  db.Sql("ALTER SYSTEM RESET wal_writer_delay");
  db.Sql("SELECT pg_reload_conf()");
  db.Sql("SELECT pg_drop_replication_slot('" + slot + "_copy')");
  REQUIRE(straddled);
}

// ---- Reading the slot through a walsender (capture/wal_stream.h) ----

// The backend type of the process that has the slot active; "" when none.
std::string SlotHolder(LogicalDb& db, const std::string& slot) {
  return db.Scalar(
      "SELECT coalesce((SELECT a.backend_type FROM pg_replication_slots s JOIN pg_stat_activity "
      "a ON a.pid = s.active_pid WHERE s.slot_name = '" +
      slot + "'), '')");
}

std::string Confirmed(LogicalDb& db, const std::string& slot) {
  return db.Scalar(
      "SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = '" + slot +
      "'");
}

// Whether the slot's confirmed position reaches `lsn` within 3 s (a status
// update is asynchronous).
bool AwaitConfirmed(LogicalDb& db, const std::string& slot, const std::string& lsn) {
  for (int i = 0; i < 150; ++i) {
    if (Lsn(Confirmed(db, slot)) >= Lsn(lsn)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

// Batches on this thread read through a stream for the scope's length.
struct OwnedStreams {
  explicit OwnedStreams(const ConnectOptions& options) {
    OwnWalStreams(options.url, "capture_slot_test");
  }
  ~OwnedStreams() { ReleaseWalStreams(); }
};

// Stages until `want` rows were taken or 60 s passed; returns the rows.
long StageUntil(LogicalDb& db, pg::Connection& stager, long want) {
  // Bounded by time, not by tries: decoding a backlog of 100,000-row
  // transactions on a loaded machine took longer than 250 tries of 20 ms
  // (a run at load 12 found the last one a moment after giving up).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  long taken = 0;
  while (taken < want && std::chrono::steady_clock::now() < deadline) {
    taken += db.Stage(stager);
    if (taken < want) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return taken;
}

// Takes a batch the way staging does, up to its Staged, and returns it with
// its transaction (still open) once the batch holds a row.
struct OpenBatch {
  std::unique_ptr<pg::Transaction> tx;
  std::unique_ptr<FeedBatch> batch;
};
OpenBatch TakeRows(pg::Connection& stager) {
  const auto feed = CatalogFeed("trellis");
  for (int i = 0; i < 250; ++i) {
    auto tx = catalog::BeginStagingBatch(stager, "trellis");
    REQUIRE(tx.ok());
    auto batch = feed->TakeBatch(stager, 500);
    REQUIRE(batch.ok());
    const pg::Params params = batch.value()->Params();
    if (!params.empty() && params[0] && *params[0] != "{}") {
      REQUIRE(batch.value()->Staged(stager, 1).ok());
      return OpenBatch{std::move(tx.value()), std::move(batch.value())};
    }
    REQUIRE(batch.value()->Staged(stager, 0).ok());
    REQUIRE(tx.value()->Commit().ok());
    REQUIRE(batch.value()->Committed(stager).ok());
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  FAIL("no batch held the row within 5 s");
  return {};
}

TEST_CASE(
    "the staging worker reads the slot through a walsender and confirms only what "
    "committed",
    "[logical][slot][stream][exactly_once]") {
  LogicalDb db;
  const std::string slot = db.Slot();
  auto stager = db.Open();
  REQUIRE(stager->Exec("SET synchronous_commit = off").ok());
  OwnedStreams streams(db.options());

  db.Sql("INSERT INTO t VALUES (11, 11)");
  CHECK(StageUntil(db, *stager, 1) == 1);
  // The testkit's logical cluster lets the stream connect: no fallback.
  CHECK(WalStreamFallback().empty());
  CHECK(SlotHolder(db, slot) == "walsender");
  const std::string staged = db.Scalar("SELECT staged_lsn::text FROM trellis.capture_feed");
  CHECK(AwaitConfirmed(db, slot, staged));

  // A batch read and recorded whose transaction rolls back (a crash before
  // the commit): the slot is not confirmed past it, and the next batch
  // takes its row again.
  db.Sql("INSERT INTO t VALUES (12, 12)");
  std::string before;
  {
    OpenBatch open = TakeRows(*stager);
    // What the empty batches before it confirmed has reached the server.
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    before = Confirmed(db, slot);
    open.tx.reset();  // ROLLBACK
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  CHECK(Confirmed(db, slot) == before);
  CHECK(StageUntil(db, *stager, 1) == 1);

  // A batch that committed but was never confirmed (the port died between
  // the two): the stream starts again from the slot's position, which
  // hands the transaction over again, and the recorded position skips it.
  db.Sql("INSERT INTO t VALUES (13, 13)");
  {
    OpenBatch open = TakeRows(*stager);
    REQUIRE(open.tx->Commit().ok());
  }
  const std::string recorded = db.Scalar("SELECT staged_lsn::text FROM trellis.capture_feed");
  CHECK(Lsn(Confirmed(db, slot)) < Lsn(recorded));
  // A write after it, so the batches read the slot rather than find
  // nothing flushed past the recorded position: only that write is taken.
  db.Sql("INSERT INTO t VALUES (14, 14)");
  long again = 0;
  for (int i = 0; i < 30; ++i) {
    again += db.Stage(*stager);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  CHECK(again == 1);
  CHECK(AwaitConfirmed(db, slot, recorded));
}

TEST_CASE("a stream the server ended is started again, losing and doubling nothing",
          "[logical][slot][stream][exactly_once]") {
  LogicalDb db;
  const std::string slot = db.Slot();
  auto stager = db.Open();
  REQUIRE(stager->Exec("SET synchronous_commit = off").ok());
  long staged = 0;
  {
    OwnedStreams streams(db.options());
    // Stages until `want` rows are in (a new stream may find the slot
    // still held by the walsender being ended, for a moment), at most 30 s.
    auto stage_until = [&](long want) {
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
      while (staged < want && std::chrono::steady_clock::now() < deadline) {
        staged += db.Stage(*stager);
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    };
    int id = 100;
    for (int round = 0; round < 4; ++round) {
      for (int k = 0; k < 5; ++k) db.Sql("INSERT INTO t VALUES (" + std::to_string(id++) + ", 0)");
      // Half the rounds end the stream with transactions in flight or
      // buffered, half while it is idle.
      if (round % 2 == 0) staged += db.Stage(*stager);
      if (round % 2 == 1) {
        stage_until(id - 100);
        CHECK(SlotHolder(db, slot) == "walsender");
      }
      db.Sql(
          "SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots WHERE slot_name = "
          "'" +
          slot + "' AND active_pid IS NOT NULL");
      for (int k = 0; k < 5; ++k) db.Sql("INSERT INTO t VALUES (" + std::to_string(id++) + ", 0)");
    }
    stage_until(40);
    // Then a while longer: nothing may come twice.
    for (int i = 0; i < 25; ++i) {
      staged += db.Stage(*stager);
      std::this_thread::sleep_for(std::chrono::milliseconds(40));
    }
  }
  // One row of `consumed` per single-row transaction: none lost, none twice.
  CHECK(staged == 40);
  // And the target agrees, once the pages are drained.
  auto workers = BackgroundWorkers::Start(db.options(), true, 1);
  db.AwaitConverged();
  CHECK(db.Scalar("SELECT count(*) FROM t_copy") == "50");
}

TEST_CASE("a slot another process streams is a pause for this worker, not a capture failure",
          "[logical][slot][stream]") {
  LogicalDb db;
  const std::string slot = db.Slot();
  std::atomic<bool> opened{false};
  std::atomic<bool> hold{true};
  std::thread other([&] {
    OwnWalStreams(db.options().url, "capture_slot_test other");
    auto conn = pg::Connection::Open(db.options().url, "capture_slot_test other");
    if (conn.ok()) (void)staging::StageBatch(*conn.value(), "trellis", 500, 1000);
    opened = true;
    while (hold) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    ReleaseWalStreams();
  });
  while (!opened) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  CHECK(SlotHolder(db, slot) == "walsender");
  auto stager = db.Open();
  {
    OwnedStreams streams(db.options());
    db.Sql("INSERT INTO t VALUES (11, 11)");
    for (int i = 0; i < 5; ++i) CHECK(db.Stage(*stager) == 0);
    CHECK(!db.FailureKind());
    hold = false;
    other.join();
    CHECK(StageUntil(db, *stager, 1) == 1);
    CHECK(SlotHolder(db, slot) == "walsender");
  }
  // Released: the walsender has let the slot go when the owner returns.
  CHECK(SlotHolder(db, slot) == "");
}

TEST_CASE("a server that refuses replication connections is read by peeks, said once",
          "[logical][slot][stream]") {
  LogicalDb db;
  const std::string slot = db.Slot();
  const std::string original = db.Scalar("SELECT pg_read_file(current_setting('hba_file'))");
  auto stager = db.Open();
  auto write_hba = [&](const std::string& content) {
    db.Sql("DO $do$ DECLARE o oid := lo_from_bytea(0, convert_to($hba$" + content +
           "$hba$, 'UTF8')); BEGIN PERFORM lo_export(o, current_setting('hba_file')); "
           "PERFORM lo_unlink(o); END $do$");
    db.Sql("SELECT pg_reload_conf()");
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  };
  struct Restore {
    std::function<void()> run;
    ~Restore() { run(); }
  } restore{[&] { write_hba(original); }};
  // A logical replication connection matches the lines of its database
  // (`replication` lines are for physical ones): new connections to the
  // test's database are refused, the open ones stay.
  const std::string database = db.Scalar("SELECT current_database()");
  write_hba("local " + database + " all reject\nhost " + database + " all all reject\n" + original);

  OwnedStreams streams(db.options());
  db.Sql("INSERT INTO t VALUES (11, 11)");
  CHECK(StageUntil(db, *stager, 1) == 1);
  const std::string why = WalStreamFallback();
  INFO(why);
  CHECK(why.find("pg_hba.conf") != std::string::npos);
  CHECK(why.find("REPLICATION") != std::string::npos);
  // Peeked and advanced: nothing holds the slot, and it is confirmed.
  CHECK(SlotHolder(db, slot) == "");
  const std::string staged = db.Scalar("SELECT staged_lsn::text FROM trellis.capture_feed");
  CHECK(Confirmed(db, slot) == staged);
}

TEST_CASE("a slot far behind is caught up by peeks, said in the fallback, and then streamed again",
          "[logical][slot][stream][catch_up][exactly_once]") {
  LogicalDb db;
  const std::string slot = db.Slot();
  auto stager = db.Open();
  REQUIRE(stager->Exec("SET synchronous_commit = off").ok());
  auto streams = std::make_unique<OwnedStreams>(db.options());
  db.Sql("INSERT INTO t VALUES (11, 11)");
  CHECK(StageUntil(db, *stager, 1) == 1);
  CHECK(SlotHolder(db, slot) == "walsender");
  CHECK(WalStreamFallback().empty());

  // A backlog well past kCatchUpBytes of WAL, in four transactions (each
  // one row of `consumed`), written while nothing stages.
  for (int k = 0; k < 4; ++k) {
    const int from = 100 + k * 100000;
    db.Sql("INSERT INTO t SELECT g, g FROM generate_series(" + std::to_string(from) + ", " +
           std::to_string(from + 99999) + ") g");
  }
  const uint64_t behind = Lsn(db.Scalar("SELECT pg_current_wal_flush_lsn()::text")) -
                          Lsn(db.Scalar("SELECT staged_lsn::text FROM trellis.capture_feed"));
  INFO("behind " << behind);
  REQUIRE(behind > kCatchUpBytes);

  const uint64_t peeks_before = CatchUpPeeks();
  // The first batch peeks: the stream is closed (no walsender holds the
  // slot) and the fallback says why, naming no fix.
  const long first = db.Stage(*stager);
  CHECK(CatchUpPeeks() == peeks_before + 1);
  CHECK(SlotHolder(db, slot) == "");
  const std::string why = WalStreamFallback();
  INFO(why);
  CHECK(why.find("catches up") != std::string::npos);
  CHECK(why.find(slot) != std::string::npos);
  // Each peek's batch advanced the slot once committed.
  const std::string staged = db.Scalar("SELECT staged_lsn::text FROM trellis.capture_feed");
  CHECK(Lsn(Confirmed(db, slot)) == Lsn(staged));

  // The rest: every backlog transaction exactly once, then the stream
  // again, for a write after the catch-up.
  CHECK(first + StageUntil(db, *stager, 4 - first) == 4);
  db.Sql("INSERT INTO t VALUES (12, 12)");
  CHECK(StageUntil(db, *stager, 1) == 1);
  CHECK(SlotHolder(db, slot) == "walsender");
  CHECK(WalStreamFallback().empty());
  // Nothing more comes (none twice).
  long again = 0;
  for (int i = 0; i < 10; ++i) {
    again += db.Stage(*stager);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  CHECK(again == 0);
  streams.reset();  // the workers' staging worker reads the slot from here
  auto workers = BackgroundWorkers::Start(db.options(), true, 1);
  db.AwaitConverged();
  CHECK(db.Scalar("SELECT count(*) FROM t_copy") == "400012");
  CHECK(db.Scalar("SELECT count(*) FROM (SELECT id, v FROM t EXCEPT SELECT id, v FROM t_copy) d") ==
        "0");
}

TEST_CASE(
    "a server whose synchronous_standby_names would take the walsender for a standby is read "
    "by peeks",
    "[logical][slot][stream]") {
  LogicalDb db;
  const std::string slot = db.Slot();
  auto stager = db.Open();
  // With '*' and no standby, a synchronous commit would wait for ever.
  REQUIRE(stager->Exec("SET synchronous_commit = local").ok());
  db.Sql("SET synchronous_commit = local");
  db.Sql("ALTER SYSTEM SET synchronous_standby_names = '*'");
  db.Sql("SELECT pg_reload_conf()");
  struct Restore {
    LogicalDb& db;
    ~Restore() {
      db.Sql("ALTER SYSTEM RESET synchronous_standby_names");
      db.Sql("SELECT pg_reload_conf()");
    }
  } restore{db};
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  OwnedStreams streams(db.options());
  db.Sql("INSERT INTO t VALUES (11, 11)");
  CHECK(StageUntil(db, *stager, 1) == 1);
  const std::string why = WalStreamFallback();
  INFO(why);
  CHECK(why.find("synchronous_standby_names") != std::string::npos);
  CHECK(SlotHolder(db, slot) == "");
}

TEST_CASE(
    "a define that must set a source's replica identity never waits for the table under the "
    "catalog's locks",
    "[logical][locks]") {
  LogicalDb db;
  // t_copy routes t by its key: the default identity is enough so far.
  CHECK(db.Scalar("SELECT relreplident FROM pg_class WHERE oid = 't'::regclass") == "d");

  // A drain of t_copy has read t and is about to update its row in
  // trellis.transforms (the table lock it needs is ROW EXCLUSIVE).
  auto drain = db.Open();
  REQUIRE(drain->Exec("BEGIN").ok());
  REQUIRE(drain->Exec("SELECT count(*) FROM t").ok());

  // A GROUP BY v routes t by v, which needs REPLICA IDENTITY FULL.
  auto other = Session::Open(db.options());
  REQUIRE(other.ok());
  auto defined = std::async(std::launch::async, [&] {
    return other.value()->Apply("TRANSFORM t_by_v FROM t SELECT v, count(*) AS n GROUP BY v", true);
  });
  bool waits_for_t = false;
  for (int i = 0; i < 500 && !waits_for_t; ++i) {
    if (defined.wait_for(std::chrono::milliseconds(10)) == std::future_status::ready) break;
    waits_for_t = db.Scalar(
                      "SELECT count(*) FROM pg_locks WHERE NOT granted AND relation = "
                      "'t'::regclass") != "0";
  }
  CHECK(waits_for_t);
  // Who holds and waits for what, for a failure's message.
  INFO(
      db.Scalar("SELECT string_agg(format('%s %s %s %s', pid, coalesce(relation::regclass::text, "
                "locktype), mode, granted), E'\\n') FROM pg_locks WHERE pid <> pg_backend_pid()"));
  // The define waits for t holding no lock on the catalog's transforms
  // table. Before, it held that table (SHARE ROW EXCLUSIVE) while it waited
  // for t to set the identity, and this closed the cycle: PostgreSQL
  // cancelled one of the two after deadlock_timeout (40P01 to a define in
  // the CI run of 2026-12-03, subquery_differs_differential_test).
  // The drain looks for a cycle first (deadlock_timeout 1 s for the
  // define), so a cycle cancels the drain's statement here, not a define
  // that Apply would run again.
  REQUIRE(drain->ExecScript("SET LOCAL lock_timeout = '10s'; SET LOCAL deadlock_timeout = '10ms'")
              .ok());
  const Status updated = drain->Exec("LOCK TABLE trellis.transforms IN ROW EXCLUSIVE MODE");
  INFO(updated.ToString());
  CHECK(updated.ok());
  REQUIRE(drain->Exec(updated.ok() ? "COMMIT" : "ROLLBACK").ok());

  auto result = defined.get();
  INFO((result.ok() ? "" : result.status().ToString()));
  REQUIRE(result.ok());
  CHECK(db.Scalar("SELECT relreplident FROM pg_class WHERE oid = 't'::regclass") == "f");
  CHECK(db.Scalar("SELECT count(*) FROM trellis.transforms WHERE target_name = 't_by_v'") == "1");
}

}  // namespace
}  // namespace trellis::capture
