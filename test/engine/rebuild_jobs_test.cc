// Rebuilds and column rebuilds are jobs (catalog/jobs.h): a request records
// one pending job, the build's start cuts it into key ranges, and the ranges
// recompute the target in place through the unit executor, driven here step
// by step the way a drain worker runs them.
#include <catch2/catch.hpp>

#include "build_steps.h"
#include "catalog/states.h"

using trellis::test::BuildStep;
using trellis::test::EngineFixture;

namespace {

constexpr const char* kQuery = trellis::test::kItemsQuery;

void BuildUntil(EngineFixture& f, trellis::pg::Connection& conn, const std::string& state) {
  for (int i = 0; i < 100 && f.Scalar("SELECT status FROM trellis.transforms") != state; ++i) {
    REQUIRE(BuildStep(conn));
  }
  REQUIRE(f.Scalar("SELECT status FROM trellis.transforms") == state);
}

void Rebuild(trellis::pg::Connection& conn,
             const std::optional<std::vector<std::string>>& columns) {
  REQUIRE(conn.Exec("BEGIN").ok());
  REQUIRE(trellis::catalog::RequestRebuild(conn, "trellis", 1, columns).ok());
  REQUIRE(conn.Exec("COMMIT").ok());
}

std::string PendingJob(EngineFixture& f) {
  return f.Scalar(
      "SELECT string_agg(format('%s:%s:%s:%s', kind, coalesce(columns::text, 'all'), "
      "coalesce(lo::text, '-'), coalesce(hi::text, '-')), ';') FROM trellis.jobs");
}

// `items_t` built and catching up, with a builder's connection.
struct BuiltItems {
  BuiltItems() {
    f.Sql(trellis::test::kItems);
    s = f.OpenSession();
    REQUIRE(s->Apply(trellis::test::kItemsDefinition, true).ok());
    conn = trellis::test::ConnectBuilder(f);
    BuildUntil(f, *conn, "catching_up");
  }
  EngineFixture f;
  std::unique_ptr<trellis::Session> s;
  std::unique_ptr<trellis::pg::Connection> conn;
};

}  // namespace

TEST_CASE("a rebuild is a pending job, then ranges that recompute the target in place",
          "[engine][backfill][jobs]") {
  BuiltItems items;
  auto& f = items.f;
  auto& s = items.s;
  auto& conn = *items.conn;
  REQUIRE(f.Differences("items_t", kQuery) == 0);

  // Changed behind Trellis's back: rows gone, rows wrong, a row too many.
  f.Sql(
      "DELETE FROM items_t WHERE id < 100; UPDATE items_t SET v2 = -1, w_up = 'x' WHERE id > "
      "5000; INSERT INTO items_t VALUES (99999, 1, 'extra')");
  Rebuild(conn, std::nullopt);
  CHECK(PendingJob(f) == "rebuild:all:-:-");
  CHECK(f.Scalar("SELECT status FROM trellis.transforms") == "waiting_to_backfill");
  REQUIRE(BuildStep(conn));  // starts it: ranges, each a job
  CHECK(f.Scalar("SELECT count(*) FROM trellis.jobs WHERE kind = 'rebuild'") == "6");
  CHECK(f.Scalar("SELECT count(*) FROM trellis.jobs WHERE lo IS NULL") == "1");
  CHECK(f.Scalar("SELECT count(*) FROM trellis.jobs WHERE hi IS NULL") == "1");
  REQUIRE(BuildStep(conn));
  REQUIRE(BuildStep(conn));
  auto st = s->ReadStatus("items_t");
  REQUIRE(st.ok());
  CHECK(st->status == "backfilling");
  CHECK(st->backfill.rows_total == 6000);
  CHECK(st->backfill.rows_done == 2000);
  CHECK_FALSE(st->backfill.columns);
  BuildUntil(f, conn, "catching_up");
  CHECK(f.Scalar("SELECT count(*) FROM trellis.jobs") == "0");
  CHECK(f.Differences("items_t", kQuery) == 0);
}

TEST_CASE("a column rebuild recomputes only its columns; requests merge, whole rows absorb them",
          "[engine][backfill][jobs]") {
  BuiltItems items;
  auto& f = items.f;
  auto& s = items.s;
  auto& conn = *items.conn;

  f.Sql("UPDATE items_t SET v2 = -1, w_up = 'x' WHERE id % 10 = 1");
  Rebuild(conn, std::vector<std::string>{"w_up"});
  CHECK(PendingJob(f) == "column_rebuild:{w_up}:-:-");
  Rebuild(conn, std::vector<std::string>{"v2"});
  CHECK(PendingJob(f) == "column_rebuild:{v2,w_up}:-:-");
  auto st = s->ReadStatus("items_t");
  REQUIRE(st.ok());
  CHECK(st->backfill.columns == std::vector<std::string>{"v2", "w_up"});
  Rebuild(conn, std::vector<std::string>{"w_up"});  // still both
  CHECK(PendingJob(f) == "column_rebuild:{v2,w_up}:-:-");
  // A whole-row rebuild absorbs a pending column rebuild, and stays whole
  // when a column rebuild is asked for after it.
  Rebuild(conn, std::nullopt);
  Rebuild(conn, std::vector<std::string>{"w_up"});
  CHECK(PendingJob(f) == "rebuild:all:-:-");
  BuildUntil(f, conn, "catching_up");
  CHECK(f.Differences("items_t", kQuery) == 0);

  // A column rebuild started and run: only its column is recomputed.
  f.Sql("UPDATE items_t SET v2 = -1, w_up = 'x' WHERE id % 10 = 1");
  Rebuild(conn, std::vector<std::string>{"w_up"});
  REQUIRE(BuildStep(conn));
  CHECK(f.Scalar("SELECT count(DISTINCT columns) || ':' || count(*) FROM trellis.jobs WHERE "
                 "kind = 'column_rebuild'") == "1:6");
  BuildUntil(f, conn, "catching_up");
  CHECK(f.Scalar("SELECT count(*) FROM items_t WHERE w_up = 'x'") == "0");
  CHECK(f.Scalar("SELECT count(*) > 0 FROM items_t WHERE v2 = -1") == "t");
  Rebuild(conn, std::vector<std::string>{"v2"});
  BuildUntil(f, conn, "catching_up");
  CHECK(f.Differences("items_t", kQuery) == 0);
}

TEST_CASE("a rebuild's failing range waits as a job of its own; the others are written",
          "[engine][backfill][jobs][failure]") {
  EngineFixture f;
  f.Sql(
      "CREATE TABLE units (id int PRIMARY KEY, price numeric NOT NULL, qty int NOT NULL);"
      "INSERT INTO units SELECT g, g, 1 + g % 3 FROM generate_series(1, 3000) g");
  auto s = f.OpenSession();
  REQUIRE(s->Apply("TRANSFORM unit_prices FROM units SELECT price / qty AS unit", true).ok());
  auto conn_owner = trellis::test::ConnectBuilder(f);
  auto& conn = *conn_owner;
  BuildUntil(f, conn, "catching_up");
  // No staging runs here: the writes stay captured, never paged, and the
  // rebuild is what brings the target up to them.
  f.Sql("UPDATE units SET price = price + 1; UPDATE units SET qty = 0 WHERE id = 1234");
  Rebuild(conn, std::nullopt);
  while (f.Scalar("SELECT count(*) FROM trellis.jobs WHERE retry_at IS NULL") != "0") {
    REQUIRE(BuildStep(conn));
  }
  // One job left: the failing key's, waiting for its retry; every other
  // row was rewritten.
  CHECK(f.Scalar("SELECT format('%s:%s:%s:%s', kind, lo, hi, attempts) FROM trellis.jobs") ==
        "rebuild:{1233}:{1234}:1");
  CHECK(f.Scalar("SELECT count(*) FROM unit_prices u JOIN units s USING (id) "
                 "WHERE s.id <> 1234 AND u.unit <> s.price / s.qty") == "0");
  auto st = s->ReadStatus("unit_prices");
  REQUIRE(st.ok());
  CHECK(st->status == "backfilling");
  REQUIRE(st->drain_failure);
  CHECK(st->drain_failure->unit == "rebuild");
  // Fixed at the source, the retry writes the key and the build ends.
  f.Sql("UPDATE units SET qty = 1 WHERE id = 1234");
  f.Sql("UPDATE trellis.jobs SET retry_at = now()");
  BuildUntil(f, conn, "catching_up");
  CHECK(f.Differences("unit_prices", "SELECT id, price / qty AS unit FROM units") == 0);
  st = s->ReadStatus("unit_prices");
  REQUIRE(st.ok());
  CHECK_FALSE(st->drain_failure);
}

TEST_CASE("promoting caught-up transforms skips a row another transaction holds",
          "[engine][backfill][jobs]") {
  // A statement locking a grouped join's two rows (PAUSE, ALTER,
  // request_backfill) and this multi-row update could wait for each other:
  // the promotion never waits, and takes the row on a later round.
  BuiltItems items;
  auto& f = items.f;
  auto& conn = *items.conn;
  REQUIRE(conn.Exec("SET lock_timeout = '2s'").ok());
  f.Sql("BEGIN; SELECT 1 FROM trellis.transforms WHERE id = 1 FOR UPDATE");
  REQUIRE(trellis::catalog::PromoteCaughtUp(conn, "trellis").ok());
  CHECK(f.Scalar("SELECT status FROM trellis.transforms") == "catching_up");
  f.Sql("COMMIT");
  REQUIRE(trellis::catalog::PromoteCaughtUp(conn, "trellis").ok());
  CHECK(f.Scalar("SELECT status FROM trellis.transforms") == "live");
}
