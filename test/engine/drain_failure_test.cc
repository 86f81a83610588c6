// Characterisation tests of the unit executor's failure classifier
// (engine/src/drain/unit_executor.h): a row whose expression fails, during a
// first build and during a drain. The failure is narrowed to its key, the
// other keys of the same unit arrive, other transforms are not held up, and
// status shows a drain failure until a retry succeeds.
#include <catch2/catch.hpp>

#include <chrono>
#include <functional>
#include <thread>

#include "engine_fixture.h"

using trellis::test::EngineFixture;

namespace {

// Polls `done` every 20 ms for up to `seconds`; true once it holds.
bool Eventually(const std::function<bool()>& done, int seconds = 30) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return done();
}

// `stock` (one row with qty = 0, which `100 / qty` cannot compute) and
// `other`, a table a second transform reads.
constexpr const char* kTables = R"sql(
CREATE TABLE stock (id int PRIMARY KEY, qty int NOT NULL);
INSERT INTO stock SELECT g, 1 + g % 7 FROM generate_series(1, 500) g;
CREATE TABLE other (id int PRIMARY KEY, v int NOT NULL);
INSERT INTO other SELECT g, g FROM generate_series(1, 100) g;
)sql";

std::optional<trellis::DrainFailureStatus> FailureOf(trellis::Session& s, const std::string& name) {
  auto st = s.ReadStatus(name);
  REQUIRE(st.ok());
  return st->drain_failure;
}

}  // namespace

TEST_CASE("a row that fails during a first build holds up no other build; status shows it",
          "[drain][failure]") {
  EngineFixture f;
  f.Sql(kTables);
  f.Sql("UPDATE stock SET qty = 0 WHERE id = 250");
  auto s = f.OpenSession();
  // Defined first, so its build is first in line.
  REQUIRE(s->Apply("TRANSFORM unit_prices FROM stock SELECT 100 / qty AS unit", true).ok());
  REQUIRE(s->Apply("TRANSFORM other_copy FROM other SELECT v AS v", true).ok());
  auto workers = trellis::BackgroundWorkers::Start(f.Options(), true, 1);

  // The other transform builds and goes live meanwhile.
  CHECK(Eventually([&] {
    auto st = s->ReadStatus("other_copy");
    return st.ok() && st->status == "live";
  }));
  CHECK(f.Differences("other_copy", "SELECT id, v FROM other") == 0);

  // The failure is narrowed to its key: every other row of the range is in.
  REQUIRE(Eventually([&] { return FailureOf(*s, "unit_prices").has_value(); }));
  auto failure = FailureOf(*s, "unit_prices");
  CHECK(failure->unit == "build_range");
  CHECK(failure->failure_class == "data_error");
  CHECK(failure->sqlstate == "22012");  // division_by_zero
  CHECK(failure->message.find("division by zero") != std::string::npos);
  CHECK(failure->attempts >= 1);
  CHECK(failure->since_us > 0);
  REQUIRE(failure->parts.size() == 1);
  CHECK(failure->parts[0].find("{250}") != std::string::npos);
  CHECK(Eventually([&] { return f.Scalar("SELECT count(*) FROM unit_prices") == "499"; }));
  CHECK(s->ReadStatus("unit_prices")->status == "backfilling");

  // Fixed: the retry appends the row, the build finishes and the failure clears.
  f.Sql("UPDATE stock SET qty = 4 WHERE id = 250");
  CHECK(Eventually([&] {
    auto st = s->ReadStatus("unit_prices");
    return st.ok() && st->status == "live" && !st->drain_failure;
  }));
  f.AwaitConverged(*s);
  CHECK(f.Differences("unit_prices", "SELECT id, 100 / qty AS unit FROM stock") == 0);
}

TEST_CASE("a row that fails during a drain holds up no other key or transform; status shows it",
          "[drain][failure]") {
  EngineFixture f;
  f.Sql(kTables);
  auto s = f.OpenSession();
  REQUIRE(s->Apply("TRANSFORM unit_prices FROM stock SELECT 100 / qty AS unit", true).ok());
  REQUIRE(s->Apply("TRANSFORM other_copy FROM other SELECT v AS v", true).ok());
  auto workers = trellis::BackgroundWorkers::Start(f.Options(), true, 2);
  f.AwaitConverged(*s);

  // One statement: one bad row among good ones, so they share a page.
  f.Sql("UPDATE stock SET qty = CASE WHEN id = 7 THEN 0 ELSE qty + 1 END WHERE id <= 20");
  f.Sql("INSERT INTO other VALUES (1000, 1000)");

  REQUIRE(Eventually([&] { return FailureOf(*s, "unit_prices").has_value(); }));
  auto failure = FailureOf(*s, "unit_prices");
  CHECK(failure->unit == "pages");
  CHECK(failure->sqlstate == "22012");
  REQUIRE(failure->parts.size() == 1);
  CHECK(failure->parts[0] == "key {7}");
  // The page's other keys arrived; the bad key's row keeps its last value.
  CHECK(Eventually([&] {
    return f.Differences("unit_prices",
                         "SELECT id, CASE WHEN id = 7 THEN 100 ELSE 100 / qty END FROM stock") == 0;
  }));
  // Other transforms drain as usual.
  CHECK(Eventually([&] { return f.Scalar("SELECT count(*) FROM other_copy") == "101"; }));
  CHECK(s->ReadStatus("other_copy")->drain_failure == std::nullopt);

  // Fixed: a retry succeeds, the failure clears, the target converges.
  f.Sql("UPDATE stock SET qty = 5 WHERE id = 7");
  CHECK(Eventually([&] { return !FailureOf(*s, "unit_prices").has_value(); }));
  f.AwaitConverged(*s);
  CHECK(f.Differences("unit_prices", "SELECT id, 100 / qty AS unit FROM stock") == 0);
}
