// Characterisation tests of failure charging (engine/src/drain/charging.h)
// through the unit executor: a row whose expression fails, during a first
// build and during a drain, is narrowed to its key and charged to the
// column (quarantine): the key's other values and every other key arrive,
// other transforms are not held up, nothing waits for a retry, and a write
// that fixes the row heals the column. A failure charged to nothing (a
// privilege revoked on the target) is a drain failure, retried until it
// clears.
#include <catch2/catch.hpp>

#include "engine_fixture.h"

using trellis::test::EngineFixture;

namespace {

// `stock` (one row with qty = 0, which `100 / qty` cannot compute) and
// `other`, a table a second transform reads.
constexpr const char* kTables = R"sql(
CREATE TABLE stock (id int PRIMARY KEY, qty int NOT NULL);
INSERT INTO stock SELECT g, 1 + g % 7 FROM generate_series(1, 500) g;
CREATE TABLE other (id int PRIMARY KEY, v int NOT NULL);
INSERT INTO other SELECT g, g FROM generate_series(1, 100) g;
)sql";

// The pause kind of column `index` of transform `name` ("" when live).
std::string ColumnKind(trellis::Session& s, const std::string& name, size_t index) {
  auto st = s.ReadStatus(name);
  REQUIRE(st.ok());
  REQUIRE(st->columns.size() > index);
  return st->columns[index].paused_kind.value_or("");
}

}  // namespace

TEST_CASE("a row that fails during a first build is quarantined; the build finishes",
          "[drain][failure]") {
  EngineFixture f;
  f.Sql(kTables);
  f.Sql("UPDATE stock SET qty = 0 WHERE id = 250");
  auto s = f.OpenSession();
  REQUIRE(
      s->Apply("TRANSFORM unit_prices FROM stock SELECT qty AS qty, 100 / qty AS unit", true).ok());
  REQUIRE(s->Apply("TRANSFORM other_copy FROM other SELECT v AS v", true).ok());
  auto workers = trellis::BackgroundWorkers::Start(f.Options(), true, 1);

  f.AwaitConverged(*s);
  auto st = s->ReadStatus("unit_prices");
  REQUIRE(st.ok());
  CHECK(st->status == "live");
  CHECK(!st->drain_failure);
  CHECK(st->held_keys == 0);
  REQUIRE(st->columns.size() == 2);
  CHECK(st->columns[0].state == "live");  // qty
  CHECK(st->columns[1].state == "paused");
  CHECK(st->columns[1].paused_kind == "quarantine");
  CHECK(f.Scalar("SELECT string_agg(column_name || ' ' || key::text || ' ' || sqlstate, ',') "
                 "FROM trellis.quarantined_rows") == "unit {250} 22012");
  // Every row arrived; the bad one with its other value, NULL in `unit`.
  CHECK(f.Differences("unit_prices",
                      "SELECT id, qty, CASE WHEN qty <> 0 THEN 100 / qty END "
                      "FROM stock") == 0);
  CHECK(f.Differences("other_copy", "SELECT id, v FROM other") == 0);

  // Fixed by a write: the key computes again and leaves the quarantine, and
  // the column, with no failing row left, is live again without a RESUME.
  f.Sql("UPDATE stock SET qty = 4 WHERE id = 250");
  f.AwaitConverged(*s);
  CHECK(ColumnKind(*s, "unit_prices", 1).empty());
  CHECK(s->ReadStatus("unit_prices")->columns[1].state == "live");
  CHECK(f.Scalar("SELECT count(*) FROM trellis.quarantined_rows") == "0");
  CHECK(f.Differences("unit_prices", "SELECT id, qty, 100 / qty FROM stock") == 0);
}

TEST_CASE("a row that fails during a drain is quarantined; its other values and keys arrive",
          "[drain][failure]") {
  EngineFixture f;
  f.Sql(kTables);
  auto s = f.OpenSession();
  REQUIRE(
      s->Apply("TRANSFORM unit_prices FROM stock SELECT qty AS qty, 100 / qty AS unit", true).ok());
  REQUIRE(s->Apply("TRANSFORM other_copy FROM other SELECT v AS v", true).ok());
  auto workers = trellis::BackgroundWorkers::Start(f.Options(), true, 2);
  f.AwaitConverged(*s);

  // One statement: one bad row among good ones, so they share a page.
  f.Sql("UPDATE stock SET qty = CASE WHEN id = 7 THEN 0 ELSE qty + 1 END WHERE id <= 20");
  f.Sql("INSERT INTO other VALUES (1000, 1000)");
  // Charged, not retried: the wait returns.
  f.AwaitConverged(*s);
  CHECK(ColumnKind(*s, "unit_prices", 0).empty());  // qty stays live
  CHECK(ColumnKind(*s, "unit_prices", 1) == "quarantine");
  CHECK(!s->ReadStatus("unit_prices")->drain_failure);
  CHECK(f.Differences("unit_prices",
                      "SELECT id, qty, CASE WHEN qty <> 0 THEN 100 / qty END "
                      "FROM stock") == 0);
  CHECK(f.Scalar("SELECT count(*) FROM other_copy") == "101");

  // The column keeps flowing for every other key.
  f.Sql("UPDATE stock SET qty = qty + 1 WHERE id BETWEEN 100 AND 110");
  f.AwaitConverged(*s);
  CHECK(f.Differences("unit_prices",
                      "SELECT id, qty, CASE WHEN qty <> 0 THEN 100 / qty END "
                      "FROM stock") == 0);
}
