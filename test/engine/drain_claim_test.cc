// What one drain claims (spec/engine.md "Drain", step 1): besides pages and
// keys, a claim is capped by the delta rows its pages carry, so a GROUP BY
// with few groups (few keys, any number of changes) is applied in bounded
// statements, the oldest page always going even alone over the cap; pages
// staged before catalog step 16, whose count is unknown, still drain.
#include <catch2/catch.hpp>

#include <limits>
#include <map>
#include <string>

#include "build_steps.h"
#include "catalog/migrations.h"
#include "drain/charging.h"
#include "drain/drain_page.h"
#include "drain/unit_executor.h"
#include "engine_fixture.h"
#include "pipeline_steps.h"
#include "staging/stage_batch.h"

namespace trellis::test {
namespace {

constexpr long kCap = drain::kDeltaRowsPerClaim;

// Three groups (status 0, 1, 2): every page of a batch lists the same three
// keys, so only its delta rows grow with the writes.
constexpr const char* kOrders = R"sql(
CREATE TABLE orders (id bigint PRIMARY KEY, status int NOT NULL, amount int NOT NULL);
INSERT INTO orders SELECT i, i % 3, i FROM generate_series(1, 40000) i;
)sql";
constexpr const char* kByStatus =
    "TRANSFORM by_status FROM orders SELECT status, count(*) AS n, sum(amount) AS total, "
    "max(amount) AS top GROUP BY status";
constexpr const char* kByStatusQuery =
    "SELECT status, count(*), sum(amount), max(amount) FROM orders GROUP BY status";

long ByStatusDifferences(EngineFixture& f) {
  return SelectDifferences(f, "SELECT status, n, total, top FROM by_status", kByStatusQuery);
}

// The delta rows each page carries, counted from the delta rows themselves
// (not from what the page records), by page id.
std::map<long, long> DeltaRowsByPage(EngineFixture& f) {
  auto rows = f.conn().Query(
      "SELECT p.id, (SELECT count(*) FROM trellis.delta_rows d WHERE d.page_id = p.id) "
      "FROM trellis.pages p ORDER BY p.id");
  REQUIRE(rows.ok());
  std::map<long, long> out;
  for (size_t r = 0; r < rows->size(); ++r) {
    out[std::stol(rows->text(r, 0))] = std::stol(rows->text(r, 1));
  }
  return out;
}

// One drain transaction; returns the pages it took (ids, oldest first), as
// seen from the pages that were there before it and are gone after.
std::vector<long> DrainOnce(EngineFixture& f, pg::Connection& conn,
                            const std::map<long, long>& before) {
  auto hook = drain::MakeChargingHook();
  drain::UnitExecutor executor(*hook);
  auto drained = drain::DrainPages(conn, "trellis", {}, executor);
  REQUIRE(drained.ok());
  REQUIRE(drained->outcome == drain::PageOutcome::kDrained);
  const auto after = DeltaRowsByPage(f);
  std::vector<long> taken;
  for (const auto& [id, deltas] : before) {
    if (!after.count(id)) taken.push_back(id);
  }
  CHECK(drained->pages == static_cast<long>(taken.size()));
  return taken;
}

long SumDeltaRows(const std::map<long, long>& pages, const std::vector<long>& ids) {
  long sum = 0;
  for (long id : ids) sum += pages.at(id);
  return sum;
}

// Updates `rows` orders from id `first` on, each in a transaction of its
// own (2 delta rows each, the old version and the new: staging folds a
// writer's changes to a group per sign, so only writers multiply delta
// rows of three groups), moving each to the next status when `move`, then
// stages them in one batch: one page of the three groups.
void StageUpdate(EngineFixture& f, pg::Connection& conn, long first, long rows, bool move) {
  f.Sql("DO $$ BEGIN FOR i IN " + std::to_string(first) + " .. " +
        std::to_string(first + rows - 1) + " LOOP UPDATE orders SET amount = amount + 7" +
        (move ? ", status = (status + 1) % 3" : "") + " WHERE id = i; COMMIT; END LOOP; END $$");
  // One batch for all of them (a capture row per writer now).
  auto staged =
      staging::StageBatch(conn, "trellis", 1000000, 1000, std::numeric_limits<long>::max());
  REQUIRE(staged.ok());
}

}  // namespace

TEST_CASE("a drain's claim of a few-group GROUP BY is capped by delta rows, not only by keys",
          "[engine][drain][deltas]") {
  EngineFixture f;
  auto s = DefineBuilt(f, kOrders, kByStatus);
  KeepOffRebuilds(f);  // the claims are tested: a rebuild sweeps every page
  auto conn = ConnectBuilder(f);
  REQUIRE(ByStatusDifferences(f) == 0);

  // The oldest page alone carries more than the cap; then eight pages of a
  // quarter of it each, with moves between groups, an insert and a delete.
  StageUpdate(f, *conn, 1, kCap / 2 + 500, false);
  for (long i = 0; i < 8; ++i) StageUpdate(f, *conn, 20000 + i * kCap / 8, kCap / 8, i % 2 == 1);
  f.Sql("INSERT INTO orders SELECT i, i % 3, 5 * i FROM generate_series(50001, 50010) i");
  StageStep(*conn);
  f.Sql("DELETE FROM orders WHERE id % 1000 = 3");
  StageStep(*conn);

  const auto pages = DeltaRowsByPage(f);
  REQUIRE(pages.size() == 11);
  REQUIRE(pages.begin()->second == kCap + 1000);
  // Every page lists the three groups only, and records its delta rows.
  CHECK(f.Scalar("SELECT max(key_count) FROM trellis.pages") == "3");
  CHECK(f.Scalar("SELECT count(*) FROM trellis.pages p WHERE delta_count IS DISTINCT FROM "
                 "(SELECT count(*) FROM trellis.delta_rows d WHERE d.page_id = p.id)") == "0");

  // Keys and pages alone would let one claim take all eleven pages
  // (33 keys, 3 x the cap in delta rows). The oldest page goes, alone.
  auto taken = DrainOnce(f, *conn, pages);
  CHECK(taken == std::vector<long>{pages.begin()->first});

  // The next claim takes the next pages up to the cap: four quarters.
  auto left = DeltaRowsByPage(f);
  taken = DrainOnce(f, *conn, left);
  CHECK(taken.size() == 4);
  CHECK(SumDeltaRows(left, taken) <= kCap);
  CHECK(taken.front() == left.begin()->first);

  // The rest goes in claims of at most the cap each, and the target equals
  // a fresh computation of its query.
  for (int claims = 0; claims < 20; ++claims) {
    left = DeltaRowsByPage(f);
    if (left.empty()) break;
    taken = DrainOnce(f, *conn, left);
    CHECK((taken.size() == 1 || SumDeltaRows(left, taken) <= kCap));
  }
  CHECK(DeltaRowsByPage(f).empty());
  CHECK(f.Scalar("SELECT count(*) FROM trellis.delta_rows") == "0");
  CHECK(ByStatusDifferences(f) == 0);
}

TEST_CASE("pages staged before catalog v16 have no delta count, drain one claim each, converge",
          "[engine][drain][deltas][catalog]") {
  EngineFixture f;
  auto s = DefineBuilt(f, kOrders, kByStatus);
  KeepOffRebuilds(f);  // the claims are tested: a rebuild sweeps every page
  auto conn = ConnectBuilder(f);
  for (long i = 0; i < 3; ++i) StageUpdate(f, *conn, 1 + i * 100, 100, i == 1);
  REQUIRE(f.Scalar("SELECT count(*) FROM trellis.pages") == "3");

  // The catalog as step 15 left it, holding these pages; the step adds the
  // count back empty.
  f.Sql(
      "ALTER TABLE trellis.pages DROP COLUMN delta_count; "
      "UPDATE trellis.catalog_version SET version = 15");
  REQUIRE(catalog::Migrate(f.conn(), "trellis").ok());
  CHECK(f.Scalar("SELECT count(*) FROM trellis.pages WHERE delta_count IS NULL") == "3");

  // A page written after the upgrade records its count.
  StageUpdate(f, *conn, 1000, 50, false);
  CHECK(f.Scalar("SELECT delta_count FROM trellis.pages ORDER BY id DESC LIMIT 1") == "100");

  // An unknown count is a whole claim's worth: each old page goes alone,
  // then the new one.
  for (int claim = 0; claim < 4; ++claim) {
    const auto before = DeltaRowsByPage(f);
    CHECK(DrainOnce(f, *conn, before).size() == 1);
  }
  CHECK(DeltaRowsByPage(f).empty());
  CHECK(ByStatusDifferences(f) == 0);
}

}  // namespace trellis::test
