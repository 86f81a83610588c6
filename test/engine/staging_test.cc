// Staging: capture rows turned into ledger pages, including a TRUNCATE.
#include <catch2/catch.hpp>

#include "engine_fixture.h"
#include "widgets.h"

using trellis::test::LivePrices;

TEST_CASE("TRUNCATE of a source empties its targets and writes after it flow",
          "[engine][truncate]") {
  LivePrices live(2);
  auto& f = live.f;
  auto& s = live.s;
  f.Sql("BEGIN; TRUNCATE widgets; INSERT INTO widgets (id, price) VALUES (1, 5), (2, 6); COMMIT;");
  f.AwaitConverged(*s);
  CHECK(f.Differences("a", "SELECT id, price FROM widgets") == 0);
  CHECK(f.Scalar("SELECT count(*) FROM a") == "2");
}
