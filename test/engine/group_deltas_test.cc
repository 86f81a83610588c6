// The delta path of a group transform, driven step by step (staging batch,
// recompute, drain) so that each step's effect on the recorded snapshots
// and the delta rows can be seen (spec/engine.md "Deltas"): a delta whose
// writer a recorded recompute saw is skipped, a later one is applied, and
// a record goes only once no pending delta can need it.
#include <catch2/catch.hpp>

#include "build_steps.h"
#include "catalog/model.h"
#include "engine_fixture.h"
#include "pipeline_steps.h"
#include "plan/bind.h"
#include "trellis/workers.h"

namespace trellis::test {
namespace {

constexpr const char* kOrders = R"sql(
CREATE TABLE orders (id bigint PRIMARY KEY, g int, amount int);
INSERT INTO orders SELECT i, i % 3, i FROM generate_series(1, 30) i;
)sql";
constexpr const char* kTotals =
    "TRANSFORM totals FROM orders SELECT g, count(*) AS n, sum(amount) AS total, "
    "max(amount) AS top GROUP BY g";
constexpr const char* kTotalsQuery =
    "SELECT g, count(*), sum(amount), max(amount) FROM orders GROUP BY g";

// Rows of the target's visible columns that differ from the query's.
long Differences(EngineFixture& f) {
  return SelectDifferences(f, "SELECT g, n, total, top FROM totals", kTotalsQuery);
}

// Recomputes group `key` (a 2-D text[] literal) the way charging and
// self-check do, which records the snapshot it read.
void RecomputeGroups(pg::Connection& conn, const std::string& keys) {
  auto t = catalog::LoadTransform(conn, "trellis", "totals");
  REQUIRE(t.ok());
  auto plan = plan::Bind(t.value(), "trellis");
  REQUIRE(plan.ok());
  REQUIRE(conn.Query(plan.value()->RecomputeKeysSql(), {keys}).ok());
}

// A built, live `totals` with no worker running.
std::unique_ptr<Session> Built(EngineFixture& f) {
  f.Sql(kOrders);
  auto s = f.OpenSession();
  REQUIRE(s->Apply(kTotals, true).ok());
  {
    auto workers = BackgroundWorkers::Start(f.Options(), true, 1);
    f.AwaitConverged(*s);
  }
  REQUIRE(Differences(f) == 0);
  return s;
}

}  // namespace

TEST_CASE("a delta a recorded recompute saw is skipped, a later one applied, the record collected",
          "[engine][group][deltas]") {
  EngineFixture f;
  auto s = Built(f);
  auto conn = ConnectBuilder(f);
  f.Sql("DELETE FROM trellis.group_snapshots");

  f.Sql("INSERT INTO orders VALUES (100, 1, 1000)");  // writer A
  StageStep(*conn);
  CHECK(f.Scalar("SELECT count(*) FROM trellis.delta_rows") == "1");
  // A recompute of group 1 reads A's row and records that it did.
  RecomputeGroups(*conn, "{{1}}");
  CHECK(f.Scalar("SELECT count(*) FROM trellis.group_snapshots") == "1");
  CHECK(f.Scalar("SELECT keys::text FROM trellis.group_snapshots") == "{\"{1}\"}");
  CHECK(Differences(f) == 0);

  f.Sql("INSERT INTO orders VALUES (101, 1, 7), (102, 2, 5)");  // writer B, after the record
  StageStep(*conn);
  // A's delta row is pending and its writer is visible in the record: kept.
  CHECK(f.Scalar("SELECT count(*) FROM trellis.group_snapshots") == "1");
  CHECK(f.Scalar("SELECT count(*) FROM trellis.delta_rows") == "3");
  DrainAllPages(*conn);
  // A counted once (by the recompute, its delta skipped), B once (its deltas).
  CHECK(Differences(f) == 0);
  CHECK(f.Scalar("SELECT count(*) FROM trellis.delta_rows") == "0");
  CHECK(f.Scalar("SELECT n FROM totals WHERE g = 1") == "12");

  // Nothing pending: the next batch collects the record.
  StageStep(*conn);
  CHECK(f.Scalar("SELECT count(*) FROM trellis.group_snapshots") == "0");
}

TEST_CASE("a record stays while a writer it saw has capture rows not staged yet",
          "[engine][group][deltas]") {
  EngineFixture f;
  auto s = Built(f);
  auto conn = ConnectBuilder(f);
  f.Sql("DELETE FROM trellis.group_snapshots");

  f.Sql("UPDATE orders SET amount = amount + 1 WHERE id = 3");  // captured, not staged
  RecomputeGroups(*conn, "{{0}}");
  // A batch that stages nothing of it would still see the capture row: run
  // the collection alone, as the staging batch runs it.
  auto collected = conn->Query(
      "DELETE FROM trellis.group_snapshots WHERE "
      "pg_snapshot_xmax(snapshot) <= LEAST((SELECT xid FROM "
      "trellis.capture ORDER BY xid LIMIT 1), "
      "pg_snapshot_xmax(pg_current_snapshot())) RETURNING 1");
  REQUIRE(collected.ok());
  CHECK(collected->size() == 0);
  StageAndDrain(*conn);
  CHECK(Differences(f) == 0);
}

TEST_CASE("one multi-row UPDATE moving rows between groups changes every group once",
          "[engine][group][deltas]") {
  EngineFixture f;
  auto s = Built(f);
  auto conn = ConnectBuilder(f);
  // Groups 0 and 1 trade rows, group 2 loses its top to group 0, and a row
  // leaves for a new group: old and new versions of one statement.
  f.Sql("UPDATE orders SET g = CASE g WHEN 0 THEN 1 WHEN 1 THEN 0 ELSE g END WHERE id <= 20");
  f.Sql("UPDATE orders SET g = 0 WHERE id = 29");
  f.Sql("UPDATE orders SET g = 7, amount = amount * 2 WHERE id IN (1, 2)");
  StageStep(*conn);
  CHECK(f.Scalar("SELECT count(*) > 0 FROM trellis.delta_rows") == "t");
  DrainAllPages(*conn);
  CHECK(Differences(f) == 0);
  f.Sql("DELETE FROM orders WHERE g = 7");
  StageAndDrain(*conn);
  CHECK(Differences(f) == 0);
  CHECK(f.Scalar("SELECT count(*) FROM totals WHERE g = 7") == "0");
}

}  // namespace trellis::test

namespace trellis::test {

// Delta rows have no foreign key to their page (catalog step 9): each
// statement that deletes pages deletes their delta rows too.
TEST_CASE("delta rows leave with their pages: drained, or their transform dropped",
          "[engine][group][deltas]") {
  EngineFixture f;
  auto s = Built(f);
  auto conn = ConnectBuilder(f);
  f.Sql("UPDATE orders SET amount = amount + 1 WHERE id <= 10");
  StageStep(*conn);
  CHECK(f.Scalar("SELECT count(*) FROM trellis.delta_rows") == "6");  // folded: 3 groups, 2 signs
  DrainAllPages(*conn);
  CHECK(f.Scalar("SELECT count(*) FROM trellis.delta_rows") == "0");
  CHECK(Differences(f) == 0);

  f.Sql("UPDATE orders SET amount = amount + 1 WHERE id <= 10");
  StageStep(*conn);
  CHECK(f.Scalar("SELECT count(*) FROM trellis.delta_rows") == "6");  // folded: 3 groups, 2 signs
  REQUIRE(s->Apply("PAUSE TRANSFORM totals", false).ok());
  REQUIRE(s->Apply("DROP TRANSFORM totals", false).ok());
  CHECK(f.Scalar("SELECT count(*) FROM trellis.pages") == "0");
  CHECK(f.Scalar("SELECT count(*) FROM trellis.delta_rows") == "0");
}

// The drain by deltas is two statements: the delta rows applied, then the
// groups the pages list without one (or held) recomputed. Staging marks a
// page whose every key came with delta rows (pages.covered_width), and the
// second statement is skipped for such pages while no group is held.
TEST_CASE("the recompute of groups without delta rows runs only when one may be there",
          "[engine][group][deltas]") {
  EngineFixture f;
  auto s = Built(f);
  auto conn = ConnectBuilder(f);
  auto t = catalog::LoadTransform(*conn, "trellis", "totals");
  REQUIRE(t.ok());
  auto plan = plan::Bind(t.value(), "trellis");
  REQUIRE(plan.ok());
  // Folded rows (max folds by max), rows staged unfolded (asked for), the
  // recompute of groups without delta rows (asked for).
  const auto statements = plan.value()->ApplyPagesSql();
  REQUIRE(statements.size() == 3);
  CHECK(statements[0].needed.empty());
  CHECK(!statements[1].needed.empty());
  REQUIRE(!statements[2].needed.empty());
  KeepOffRebuilds(f);
  auto delta_path = [&] {
    auto st = s->ReadStatus("totals");
    REQUIRE(st.ok());
    return st->last_batch && st->last_batch->path == "delta";
  };
  auto needed = [&] {
    auto asked = conn->Query(statements[2].needed,
                             {f.Scalar("SELECT array_agg(id)::text FROM trellis.pages")});
    REQUIRE(asked.ok());
    return asked->text(0, 0);
  };

  f.Sql("INSERT INTO orders VALUES (100, 1, 1000), (101, 2, 5)");
  StageStep(*conn);
  // Every key came with its delta rows, of the routed width.
  CHECK(f.Scalar("SELECT count(*) FROM trellis.pages") == "1");
  CHECK(f.Scalar("SELECT covered_width = (SELECT max(cardinality(row_values)) FROM "
                 "trellis.delta_rows) FROM trellis.pages") == "t");
  CHECK(needed() == "f");

  // A held group takes no deltas and must be recomputed instead.
  f.Sql("INSERT INTO trellis.held_keys (transform_id, key, error, last_failed_at) VALUES (" +
        std::to_string(t->id) + ", '{1}', 'test', now() - interval '1 minute')");
  CHECK(needed() == "t");
  DrainAllPages(*conn);
  CHECK(delta_path());
  CHECK(Differences(f) == 0);
  CHECK(f.Scalar("SELECT count(*) FROM trellis.held_keys") == "0");

  // A page written by anything but staging's delta path says nothing.
  f.Sql("INSERT INTO orders VALUES (102, 0, 7)");
  StageStep(*conn);
  CHECK(needed() == "f");
  f.Sql("UPDATE trellis.pages SET covered_width = NULL");
  CHECK(needed() == "t");
  DrainAllPages(*conn);
  CHECK(delta_path());
  CHECK(Differences(f) == 0);
}

}  // namespace trellis::test
