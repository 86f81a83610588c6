// capture/decoded_changes.h over what a real pgoutput slot of a --logical
// testkit cluster hands over: each kind of write becomes the `consumed` row
// trigger capture would have written (routing values, old versions first),
// a replica identity that lacks a routing column becomes a TRUNCATE row
// (its readers rebuild) instead of a wrong old value, redelivered
// transactions are skipped by commit LSN, and a mark cuts the stream.
#include <catch2/catch.hpp>

#include <map>

#include "capture/decoded_changes.h"
#include "capture/logical_feed.h"
#include "pg/connection.h"
#include "slot_peek.h"
#include "throwaway_cluster.h"

namespace trellis::capture {
namespace {

// "op:v1|v2;v1|v2" per row, NULL as "~".
std::string Show(const DecodedRow& row) {
  std::string out(1, row.op);
  out += ":";
  for (size_t v = 0; v < row.versions.size(); ++v) {
    if (v) out += ";";
    for (size_t c = 0; c < row.versions[v].size(); ++c) {
      if (c) out += "|";
      out += row.versions[v][c].value_or("~");
    }
  }
  return out;
}

TEST_CASE("a slot's changes become the rows trigger capture writes", "[logical]") {
  test::ThrowawayCluster cluster(TRELLIS_TESTKIT_BINARY, {"--logical"});
  auto opened = pg::Connection::Open(cluster.url(), "decoded_changes_test");
  REQUIRE(opened.ok());
  pg::Connection& conn = *opened.value();
  auto sql = [&](const std::string& statement) {
    const Status done = conn.Exec(statement);
    INFO(statement << ": " << done.ToString());
    REQUIRE(done.ok());
  };
  // Decoding reads only flushed WAL, and the testkit commits
  // asynchronously unless asked: each write here is flushed as it commits.
  sql("SET synchronous_commit = on");
  sql("CREATE TABLE t (id int PRIMARY KEY, g text, big text)");
  sql("ALTER TABLE t ALTER COLUMN big SET STORAGE EXTERNAL");
  sql("CREATE TABLE marks (id bigint PRIMARY KEY)");
  sql("CREATE PUBLICATION p FOR TABLE t, marks");
  sql("SELECT pg_create_logical_replication_slot('s', 'pgoutput')");
  auto oids = conn.Query("SELECT 't'::regclass::oid::text, 'marks'::regclass::oid::text");
  REQUIRE(oids.ok());
  const auto t = static_cast<uint32_t>(std::stoul(oids->text(0, 0)));
  const auto marks = static_cast<uint32_t>(std::stoul(oids->text(0, 1)));

  const std::map<uint32_t, std::vector<RelationSource>> by_key = {{t, {{1, {"id"}}}}};
  const std::map<uint32_t, std::vector<RelationSource>> by_group = {{t, {{2, {"id", "g"}}}}};

  SECTION("the default identity routes a key-only source; a group source rebuilds") {
    sql("INSERT INTO t VALUES (1, 'a', repeat('x', 5000)), (2, NULL, 'y')");
    sql("UPDATE t SET g = 'b' WHERE id = 1");
    sql("UPDATE t SET id = 3 WHERE id = 2");
    sql("DELETE FROM t WHERE id = 3");
    sql("TRUNCATE t");
    auto keyed = DecodeChanges(test::PeekSlot(conn), by_key, {});
    REQUIRE(keyed.ok());
    std::vector<std::string> shown;
    for (const auto& row : keyed->rows) shown.push_back(Show(row));
    // One row per statement; an UPDATE's old versions first.
    CHECK(shown == std::vector<std::string>{"I:1;2", "U:1;1", "U:2;3", "D:3", "T:"});
    CHECK(keyed->unroutable.empty());
    CHECK(keyed->transactions == 5);

    auto grouped = DecodeChanges(test::PeekSlot(conn), by_group, {});
    REQUIRE(grouped.ok());
    shown.clear();
    for (const auto& row : grouped->rows) shown.push_back(Show(row));
    // The old group of an UPDATE or DELETE is not in the WAL: a TRUNCATE
    // row, so the source's readers rebuild rather than miss the old group.
    CHECK(shown == std::vector<std::string>{"I:1|a;2|~", "T:", "T:", "T:", "T:"});
    CHECK(grouped->unroutable.size() == 3);
  }

  SECTION("REPLICA IDENTITY FULL routes a group source, unchanged out-of-line values too") {
    sql("ALTER TABLE t REPLICA IDENTITY FULL");
    sql("INSERT INTO t VALUES (1, 'a', repeat('x', 5000))");
    sql("UPDATE t SET g = 'b' WHERE id = 1");
    sql("DELETE FROM t WHERE id = 1");
    const std::map<uint32_t, std::vector<RelationSource>> by_big = {{t, {{3, {"id", "big"}}}}};
    auto grouped = DecodeChanges(test::PeekSlot(conn), by_group, {});
    REQUIRE(grouped.ok());
    std::vector<std::string> shown;
    for (const auto& row : grouped->rows) shown.push_back(Show(row));
    CHECK(shown == std::vector<std::string>{"I:1|a", "U:1|a;1|b", "D:1|b"});
    auto big = DecodeChanges(test::PeekSlot(conn), by_big, {});
    REQUIRE(big.ok());
    REQUIRE(big->rows.size() == 3);
    // The UPDATE's new row has `big` unchanged and out of line: taken from
    // the old row.
    REQUIRE(big->rows[1].versions.size() == 2);
    CHECK(big->rows[1].versions[1][1] == std::string(5000, 'x'));
  }

  SECTION("staged transactions are skipped, and a mark cuts the stream") {
    sql("INSERT INTO t VALUES (1, 'a', '')");
    sql("INSERT INTO marks VALUES (7)");
    sql("INSERT INTO t VALUES (2, 'a', '')");
    const auto messages = test::PeekSlot(conn);
    auto all = DecodeChanges(messages, by_key, {});
    REQUIRE(all.ok());
    REQUIRE(all->rows.size() == 2);
    REQUIRE(all->transactions == 3);

    // A switch back to triggers: the writes before the mark are the slot's,
    // and the stream ends at the mark's transaction.
    DecodeRules before_mark;
    before_mark.marks_relid = marks;
    before_mark.awaiting_mark = 7;
    before_mark.take_before_mark = true;
    auto cut = DecodeChanges(messages, by_key, before_mark);
    REQUIRE(cut.ok());
    CHECK(cut->mark_seen);
    REQUIRE(cut->rows.size() == 1);  // only the write before the mark
    CHECK(Show(cut->rows[0]) == "I:1");

    DecodeRules after_mark = before_mark;
    after_mark.take_before_mark = false;
    auto after = DecodeChanges(messages, by_key, after_mark);
    REQUIRE(after.ok());
    CHECK(after->mark_seen);
    REQUIRE(after->rows.size() == 1);  // only the write after it
    CHECK(Show(after->rows[0]) == "I:2");
    CHECK(after->last_end == all->last_end);

    // Redelivered after a crash between staging's commit and the slot's
    // confirmation: everything through the recorded position is skipped.
    DecodeRules staged;
    staged.staged_through = cut->last_end;  // through the mark's transaction
    auto rest = DecodeChanges(messages, by_key, staged);
    REQUIRE(rest.ok());
    REQUIRE(rest->rows.size() == 1);
    CHECK(Show(rest->rows[0]) == "I:2");
    staged.staged_through = all->last_end;
    auto none = DecodeChanges(messages, by_key, staged);
    REQUIRE(none.ok());
    CHECK(none->rows.empty());
  }
}

TEST_CASE("routing literals and widened xids", "[logical]") {
  CHECK(RoutingLiteral({}) == "{}");
  CHECK(RoutingLiteral(
            {{std::string("a\"b"), std::nullopt}, {std::string("\\"), std::string("NULL")}}) ==
        "{{\"a\\\"b\",NULL},{\"\\\\\",\"NULL\"}}");
  CHECK(WidenXid(5, (uint64_t{3} << 32) + 10) == (uint64_t{3} << 32) + 5);
  // A transaction from before the epoch turned.
  CHECK(WidenXid(0xfffffff0u, (uint64_t{3} << 32) + 10) == (uint64_t{2} << 32) + 0xfffffff0u);
  CHECK(ParseLsn("16/B374D848") == (uint64_t{0x16} << 32) + 0xB374D848u);
  CHECK(!ParseLsn("16B374D848"));
  CHECK(!ParseLsn("/1"));
}

}  // namespace
}  // namespace trellis::capture
