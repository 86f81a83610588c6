// Chain-aware convergence (engine/src/reads/convergence.cc): a transform
// that reads another transform's target. A write to the root is in the leaf
// once await_converged returns.
#include <catch2/catch.hpp>

#include "engine_fixture.h"

using trellis::test::EngineFixture;

TEST_CASE("await_converged waits through a chain of transforms", "[convergence]") {
  EngineFixture f;
  f.Sql(R"sql(
CREATE TABLE items (id int PRIMARY KEY, price int NOT NULL);
INSERT INTO items SELECT g, g FROM generate_series(1, 2000) g;
)sql");
  auto s = f.OpenSession();
  auto workers = trellis::BackgroundWorkers::Start(f.Options(), true, 2);
  REQUIRE(s->Apply("TRANSFORM doubled FROM items SELECT price * 2 AS p2", true).ok());
  f.AwaitConverged(*s);
  // The second level reads the first level's target, the third the second's.
  REQUIRE(s->Apply("TRANSFORM plus_one FROM doubled SELECT p2 + 1 AS p3", true).ok());
  f.AwaitConverged(*s);
  REQUIRE(
      s->Apply("TRANSFORM negated FROM plus_one SELECT -p3 AS p4 WHERE p3 % 3 <> 0", true).ok());
  f.AwaitConverged(*s);
  constexpr const char* kLeaf =
      "SELECT id, -(price * 2 + 1) AS p4 FROM items WHERE (price * 2 + 1) % 3 <> 0";
  CHECK(f.Differences("negated", kLeaf) == 0);

  // Each round writes the root and, without any other wait, expects the
  // leaf to hold the writes once await_converged returns.
  for (int round = 0; round < 5; ++round) {
    f.Sql("UPDATE items SET price = price + 1 WHERE id % 5 = " + std::to_string(round));
    f.Sql("INSERT INTO items SELECT g, g FROM generate_series(" +
          std::to_string(3000 + round * 10) + ", " + std::to_string(3005 + round * 10) + ") g");
    f.Sql("DELETE FROM items WHERE id = " + std::to_string(100 + round));
    f.AwaitConverged(*s);
    INFO("round " << round);
    CHECK(f.Differences("doubled", "SELECT id, price * 2 AS p2 FROM items") == 0);
    CHECK(f.Differences("negated", kLeaf) == 0);
  }
}
