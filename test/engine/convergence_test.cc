// Convergence: watermark tokens and writes that commit late.
#include <catch2/catch.hpp>

#include "engine_fixture.h"
#include "widgets.h"

using trellis::Code;
using trellis::test::EngineFixture;
using trellis::test::kWidgets;

TEST_CASE("a long open transaction's writes reach the target after it commits",
          "[engine][convergence]") {
  EngineFixture f;
  f.Sql(kWidgets);
  auto s = f.OpenSession();
  REQUIRE(s->Apply("TRANSFORM p FROM widgets SELECT price AS price", true).ok());
  auto workers = trellis::BackgroundWorkers::Start(f.Options(), true, 1);
  f.AwaitConverged(*s);

  auto writer = trellis::pg::Connection::Open(f.url(), "long_writer");
  REQUIRE(writer.ok());
  REQUIRE(writer.value()->Exec("BEGIN").ok());
  REQUIRE(writer.value()->Exec("UPDATE widgets SET price = -1 WHERE id = 7").ok());
  // Others commit and drain while the writer sits idle in transaction.
  f.Sql("UPDATE widgets SET price = -2 WHERE id = 8");
  f.AwaitConverged(*s);
  CHECK(f.Scalar("SELECT price FROM p WHERE id = 8") == "-2");
  CHECK(f.Scalar("SELECT price FROM p WHERE id = 7") == "10.5");
  REQUIRE(writer.value()->Exec("COMMIT").ok());
  f.AwaitConverged(*s);
  CHECK(f.Scalar("SELECT price FROM p WHERE id = 7") == "-1");
  CHECK(f.Differences("p", "SELECT id, price FROM widgets") == 0);
}

TEST_CASE("a bad watermark token is a validation error", "[engine][convergence]") {
  EngineFixture f;
  auto s = f.OpenSession();
  auto r = s->AwaitConverged("not a snapshot", std::chrono::milliseconds(100));
  REQUIRE(!r.ok());
  CHECK(r.status().code() == Code::kValidation);
}
