// capture/visible_commits.h: a slot hands over a commit before the writer is
// visible to new snapshots; the feed stages only the transactions a
// snapshot taken after the read sees. The gap is made wide and certain with
// a synchronous standby that never answers: the writer's commit is flushed
// (and decodable), and the writer waits before it leaves the running
// transactions until its wait is cancelled.
#include <catch2/catch.hpp>

#include <chrono>
#include <thread>

#include "capture/visible_commits.h"
#include "pg/connection.h"
#include "slot_peek.h"
#include "throwaway_cluster.h"

namespace trellis::capture {
namespace {

TEST_CASE("a snapshot's text is read and says which transactions it sees",
          "[logical][visible_commits]") {
  auto s = XactSnapshot::Parse("740:746:740,743");
  REQUIRE(s);
  CHECK(s->xmin == 740);
  CHECK(s->xmax == 746);
  CHECK(s->running == std::vector<uint64_t>{740, 743});
  CHECK(s->Sees(739));
  CHECK_FALSE(s->Sees(740));
  CHECK(s->Sees(741));
  CHECK_FALSE(s->Sees(743));
  CHECK(s->Sees(745));
  CHECK_FALSE(s->Sees(746));
  auto empty = XactSnapshot::Parse("746:746:");
  REQUIRE(empty);
  CHECK(empty->running.empty());
  CHECK(empty->Sees(745));
  for (const char* bad : {"", "746", "746:746", "747:746:", "1:2:x", "1:2:3,", "a:2:"}) {
    INFO(bad);
    CHECK_FALSE(XactSnapshot::Parse(bad));
  }
}

TEST_CASE("a commit the slot hands over before its writer is visible is held back",
          "[logical][visible_commits]") {
  test::ThrowawayCluster cluster(TRELLIS_TESTKIT_BINARY, {"--logical"});
  auto opened = pg::Connection::Open(cluster.url(), "visible_commits_test");
  REQUIRE(opened.ok());
  pg::Connection& conn = *opened.value();
  auto sql = [&](pg::Connection& c, const std::string& statement) {
    const Status done = c.Exec(statement);
    INFO(statement << ": " << done.ToString());
    REQUIRE(done.ok());
  };
  sql(conn, "CREATE TABLE t (id int PRIMARY KEY, v int)");
  sql(conn, "CREATE PUBLICATION p FOR TABLE t");
  sql(conn, "SELECT pg_create_logical_replication_slot('s', 'pgoutput')");
  sql(conn, "SET synchronous_commit = on");
  sql(conn, "INSERT INTO t VALUES (1, 0)");  // visible at once: no standby is asked for yet
  sql(conn, "ALTER SYSTEM SET synchronous_standby_names = 'nobody'");
  sql(conn, "SELECT pg_reload_conf()");
  sql(conn, "SET synchronous_commit = off");  // this session never waits for the standby

  auto writer_opened = pg::Connection::Open(cluster.url(), "visible_commits_writer");
  REQUIRE(writer_opened.ok());
  pg::Connection& writer = *writer_opened.value();
  sql(writer, "SET synchronous_commit = on");
  auto pid = writer.Query("SELECT pg_backend_pid()::text");
  REQUIRE(pid.ok());
  const std::string writer_pid = pid->text(0, 0);
  Status written;
  std::thread write([&] { written = writer.Exec("UPDATE t SET v = 1 WHERE id = 1"); });

  // Once the writer waits for the standby, its commit is flushed.
  bool waiting = false;
  for (int i = 0; i < 500 && !waiting; ++i) {
    auto w = conn.Query(
        "SELECT count(*)::text FROM pg_stat_activity WHERE pid = $1::int AND "
        "wait_event = 'SyncRep'",
        {writer_pid});
    REQUIRE(w.ok());
    waiting = w->text(0, 0) == "1";
    if (!waiting) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  REQUIRE(waiting);

  auto snapshot = [&] {
    auto rows = conn.Query("SELECT pg_current_snapshot()::text");
    REQUIRE(rows.ok());
    auto parsed = XactSnapshot::Parse(rows->text(0, 0));
    REQUIRE(parsed);
    return *parsed;
  };

  // The INSERT's transaction (begin, relation, insert, commit), then the
  // UPDATE's (begin, update, commit): decodable, yet no new snapshot sees
  // the UPDATE. Checked once the writer is let go, so that a failure here
  // does not leave it waiting.
  const auto messages = test::PeekSlot(conn);
  auto v = conn.Query("SELECT v::text FROM t");
  auto held = VisiblePrefix(messages, snapshot());
  sql(conn, "SELECT pg_cancel_backend(" + writer_pid + ")");
  write.join();
  INFO(written.ToString());
  CHECK(messages.size() == 7);
  REQUIRE(v.ok());
  CHECK(v->text(0, 0) == "0");
  REQUIRE(held.ok());
  CHECK(held.value() == 4);

  bool seen = false;
  for (int i = 0; i < 500 && !seen; ++i) {
    auto all = VisiblePrefix(messages, snapshot());
    REQUIRE(all.ok());
    seen = all.value() == messages.size();
    if (!seen) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  CHECK(seen);
  v = conn.Query("SELECT v::text FROM t");
  REQUIRE(v.ok());
  CHECK(v->text(0, 0) == "1");
}

}  // namespace
}  // namespace trellis::capture
