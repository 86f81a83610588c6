// The catalog: migrations.
#include <catch2/catch.hpp>

#include <thread>

#include "engine_fixture.h"

using trellis::Code;
using trellis::test::EngineFixture;

TEST_CASE("migrate is idempotent and two sessions can migrate at once", "[engine][catalog]") {
  EngineFixture f;
  auto a = f.OpenSession(false);
  auto b = f.OpenSession(false);
  trellis::Status sa, sb;
  std::thread ta([&] { sa = a->Migrate(); });
  std::thread tb([&] { sb = b->Migrate(); });
  ta.join();
  tb.join();
  CHECK(sa.ok());
  CHECK(sb.ok());
  CHECK(a->Migrate().ok());
  CHECK(f.Scalar("SELECT version FROM trellis.catalog_version") == "1");
}

TEST_CASE("calls before migrate say to run migrate", "[engine][catalog]") {
  EngineFixture f;
  auto s = f.OpenSession(false);
  auto r = s->Apply("TRANSFORM t FROM x SELECT a AS b", false);
  REQUIRE(!r.ok());
  CHECK(r.status().code() == Code::kNotMigrated);
  CHECK_THAT(r.status().message(), Catch::Contains("migrate"));
  CHECK(s->Definitions().status().code() == Code::kNotMigrated);
}
