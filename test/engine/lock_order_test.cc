// The catalog rows' lock order against the workers (spec/engine.md "Lock
// order"): a statement on a transform of stages locks the owner's row and
// then each stage's, while a staging batch inserting pages for a stage and
// then for its owner checks each foreign key with FOR KEY SHARE, in its own
// order. With the statements' row locks FOR UPDATE the two deadlocked, and
// PostgreSQL cancelled one: request_backfill of a grouped join under
// writers failed with 40P01 in CI (2026-12-01).
#include <catch2/catch.hpp>

#include <chrono>
#include <future>

#include "catalog/locks.h"
#include "engine_fixture.h"
#include "pg/connection.h"

using trellis::test::EngineFixture;
namespace pg = trellis::pg;

namespace {

// Orders and customers, and `by_region`: a GROUP BY over their join (a
// hidden join stage and its owner). Returns the session that defined it.
std::unique_ptr<trellis::Session> DefineByRegion(EngineFixture& f) {
  f.Sql(
      "CREATE TABLE customers (id int PRIMARY KEY, region text); "
      "CREATE TABLE orders (id int PRIMARY KEY, customer_id int, amount int); "
      "INSERT INTO customers SELECT g, 'r' || (g % 3) FROM generate_series(1, 10) g; "
      "INSERT INTO orders SELECT g, g % 10 + 1, g FROM generate_series(1, 100) g");
  auto s = f.OpenSession();
  REQUIRE(s->Apply("TRANSFORM by_region FROM orders JOIN customers ON orders.customer_id = "
                   "customers.id SELECT customers.region, sum(orders.amount) AS total "
                   "GROUP BY customers.region",
                   true)
              .ok());
  return s;
}

}  // namespace

TEST_CASE("request_backfill of a grouped join and a batch's key checks on both rows never deadlock",
          "[engine][locks]") {
  EngineFixture f;
  auto s = DefineByRegion(f);
  const std::string owner =
      f.Scalar("SELECT id FROM trellis.transforms WHERE target_name = 'by_region'");
  const std::string stage = f.Scalar("SELECT id FROM trellis.transforms WHERE owner_id = " + owner);

  // The batch: its page insert for the stage has checked the stage's key.
  auto batch = pg::Connection::Open(f.url(), "engine_test");
  REQUIRE(batch.ok());
  REQUIRE(batch.value()->Exec("BEGIN").ok());
  REQUIRE(batch.value()
              ->Exec("SELECT 1 FROM trellis.transforms WHERE id = " + stage + " FOR KEY SHARE")
              .ok());

  auto statement = f.OpenSession(/*migrate=*/false);
  auto backfill =
      std::async(std::launch::async, [&] { return statement->RequestBackfill("by_region"); });
  // Until it has finished or waits on a row lock (as it did before: it
  // held the owner's row and asked for the stage's).
  for (int i = 0; i < 300; ++i) {
    if (backfill.wait_for(std::chrono::milliseconds(10)) == std::future_status::ready) break;
    if (f.Scalar("SELECT count(*) FROM pg_locks WHERE NOT granted AND locktype IN "
                 "('transactionid', 'tuple')") != "0") {
      break;
    }
  }

  // Then the batch's insert for the owner checks the owner's key. Before,
  // this closed the cycle, and one of the two was cancelled after
  // deadlock_timeout.
  trellis::Status owner_checked = batch.value()->Exec(
      "SELECT 1 FROM trellis.transforms WHERE id = " + owner + " FOR KEY SHARE");
  CHECK(owner_checked.ok());
  REQUIRE(batch.value()->Exec(owner_checked.ok() ? "COMMIT" : "ROLLBACK").ok());
  trellis::Status requested = backfill.get();
  CHECK(requested.ok());
  // Both rebuilds were asked for: the stage and the owner wait to build.
  CHECK(f.Scalar("SELECT count(*) FROM trellis.transforms WHERE id IN (" + owner + ", " + stage +
                 ") AND status = 'waiting_to_backfill'") == "2");
}

TEST_CASE("DROP of a transform and a staging batch reading its source and target never deadlock",
          "[engine][locks]") {
  EngineFixture f;
  auto s = DefineByRegion(f);
  REQUIRE(s->Apply("PAUSE TRANSFORM by_region", false).ok());
  // The hidden join stage the grouping reads.
  const std::string stage = f.Scalar(
      "SELECT quote_ident(target_name) FROM trellis.transforms WHERE owner_id IS NOT NULL");

  // A staging batch (it holds the fence shared) has read the source.
  auto batch_conn = pg::Connection::Open(f.url(), "engine_test");
  REQUIRE(batch_conn.ok());
  pg::Connection& batch = *batch_conn.value();
  auto tx = trellis::catalog::BeginStagingBatch(batch, "trellis");
  REQUIRE(tx.ok());
  REQUIRE(batch.Exec("SELECT count(*) FROM orders").ok());

  auto statement = f.OpenSession(/*migrate=*/false);
  auto dropped = std::async(std::launch::async,
                            [&] { return statement->Apply("DROP TRANSFORM by_region", false); });
  std::string waits_for;
  for (int i = 0; i < 300 && waits_for.empty(); ++i) {
    if (dropped.wait_for(std::chrono::milliseconds(10)) == std::future_status::ready) break;
    waits_for =
        f.Scalar("SELECT coalesce(string_agg(locktype, ','), '') FROM pg_locks WHERE NOT granted");
  }
  // DROP waits for the batch's fence before it touches a table. Before,
  // it waited for the source, holding the stages' targets it had dropped.
  CHECK(waits_for == "advisory");

  // Then the batch reads the hidden stage's target (capture of a stage's
  // target is read as any source's). Before, DROP had dropped that table
  // (holding it exclusively) and waited for the source, to remove its
  // capture triggers: each waited for the other until PostgreSQL cancelled
  // one (seen as 40P01 in staging while the TPC-H bench dropped a query).
  trellis::Status read = batch.Exec("SELECT count(*) FROM trellis." + stage);
  CHECK(read.ok());
  REQUIRE(tx.value()->Commit().ok());
  auto result = dropped.get();
  CHECK(result.ok());
  CHECK(f.Scalar("SELECT to_regclass('by_region') IS NULL") == "t");
}
