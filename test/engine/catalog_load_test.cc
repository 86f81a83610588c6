// Loading a transform while an ALTER TRANSFORM commits: the load must see
// the transform as it was before the ALTER or as it is after, never the
// definition of one and the columns of the other. A staging batch loads
// transforms without the drain lock an ALTER takes, and a half-altered
// transform failed its plan ("has no catalog column"; bench/README.md,
// "Fleet soak", finding 4).
#include <catch2/catch.hpp>

#include <chrono>
#include <thread>

#include "catalog/model.h"
#include "engine_fixture.h"
#include "pg/connection.h"
#include "widgets.h"

using trellis::test::EngineFixture;
using trellis::test::kWidgets;
namespace catalog = trellis::catalog;
namespace pg = trellis::pg;

namespace {

bool HasColumn(const catalog::Transform& t, const std::string& name) {
  for (const auto& c : t.columns) {
    if (c.name == name) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("a transform loaded across an ALTER's commit is read in one snapshot",
          "[engine][catalog]") {
  EngineFixture f;
  f.Sql(kWidgets);
  auto s = f.OpenSession();
  REQUIRE(s->Apply("TRANSFORM t FROM widgets SELECT price AS price, name AS label", true).ok());

  // The load's second statement (the parts) waits behind this lock on
  // `sources`, which the first (the transforms row) does not read; it takes
  // its snapshot once the lock is granted.
  auto blocker = pg::Connection::Open(f.url(), "engine_test");
  REQUIRE(blocker.ok());
  REQUIRE(blocker.value()->Exec("BEGIN").ok());
  REQUIRE(blocker.value()->Exec("LOCK TABLE trellis.sources IN ACCESS EXCLUSIVE MODE").ok());

  auto loader = pg::Connection::Open(f.url(), "engine_test");
  REQUIRE(loader.ok());
  trellis::Result<catalog::Transform> loaded = trellis::Status::Internal("not loaded");
  std::thread load([&] { loaded = catalog::LoadTransform(*loader.value(), "trellis", "t"); });
  bool waiting = false;
  for (int i = 0; i < 500 && !waiting; ++i) {
    waiting = f.Scalar(
                  "SELECT count(*) FROM pg_locks WHERE NOT granted AND relation = "
                  "'trellis.sources'::regclass") != "0";
    if (!waiting) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (!waiting) {
    // Lets the load finish so the thread can be joined; the test fails
    // below whatever the rollback says.
    (void)blocker.value()->Exec("ROLLBACK");
    load.join();
    FAIL("the load never waited for the lock on trellis.sources");
  }

  // What ALTER TRANSFORM t DROP COLUMN label commits, in the catalog (the
  // statement itself would wait for the lock too: it loads the transform).
  f.Sql(R"sql(
BEGIN;
DELETE FROM trellis.transform_columns
WHERE transform_id = (SELECT id FROM trellis.transforms WHERE target_name = 't') AND name = 'label';
UPDATE trellis.transforms SET definition = 'TRANSFORM t FROM widgets SELECT price AS price'
WHERE target_name = 't';
COMMIT;)sql");
  REQUIRE(blocker.value()->Exec("ROLLBACK").ok());
  load.join();

  REQUIRE(loaded.ok());
  const bool defined = loaded->definition.find("label") != std::string::npos;
  INFO("definition: " << loaded->definition);
  CHECK(defined == HasColumn(loaded.value(), "label"));
  CHECK(HasColumn(loaded.value(), "price"));
}

TEST_CASE("loading every transform plans the parts once per connection", "[engine][catalog]") {
  // Each staging batch loads every transform. With the ids as a parameter
  // the server made a custom plan of the parts at every load (0.75 ms);
  // without one, the plan is made once.
  EngineFixture f;
  f.Sql(kWidgets);
  auto s = f.OpenSession();
  REQUIRE(s->Apply("TRANSFORM t1 FROM widgets SELECT price AS price", true).ok());
  REQUIRE(s->Apply("TRANSFORM t2 FROM widgets SELECT name AS label", true).ok());
  auto loader = pg::Connection::Open(f.url(), "engine_test");
  REQUIRE(loader.ok());
  for (int i = 0; i < 3; ++i) {
    auto all = catalog::LoadTransforms(*loader.value(), "trellis");
    REQUIRE(all.ok());
    CHECK(all->size() == 2);
    CHECK(HasColumn(all->back(), "label"));
  }
  auto plans = loader.value()->Query(
      "SELECT sum(custom_plans), sum(generic_plans) FROM pg_catalog.pg_prepared_statements "
      "WHERE statement LIKE '%SELECT ''definition''%'");
  REQUIRE(plans.ok());
  CHECK(plans->text(0, 0) == "0");
  CHECK(plans->text(0, 1) == "3");
}

TEST_CASE("a table's readers are loaded without the rest of the catalog", "[engine][catalog]") {
  EngineFixture f;
  f.Sql(kWidgets);
  auto s = f.OpenSession();
  REQUIRE(s->Apply("TRANSFORM prices FROM widgets SELECT price AS price", true).ok());
  REQUIRE(s->Apply("TRANSFORM labels FROM widgets SELECT name AS label", true).ok());
  REQUIRE(s->Apply("TRANSFORM dear FROM prices SELECT price AS price WHERE price > 10", true).ok());
  auto conn = pg::Connection::Open(f.url(), "engine_test");
  REQUIRE(conn.ok());
  auto names = [&](const std::string& table) {
    auto readers = catalog::LoadReadersOf(*conn.value(), "trellis", "public", table);
    REQUIRE(readers.ok());
    std::vector<std::string> out;
    for (const auto& t : readers.value()) {
      CHECK_FALSE(t.columns.empty());  // loaded whole, parts included
      out.push_back(t.target_name);
    }
    return out;
  };
  CHECK(names("widgets") == std::vector<std::string>{"prices", "labels"});
  CHECK(names("prices") == std::vector<std::string>{"dear"});
  CHECK(names("dear").empty());
}
