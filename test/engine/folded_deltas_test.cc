// Delta rows folded at staging (spec/engine.md "Deltas", "Folded delta
// rows"): a plan whose state columns folded from changes all have a
// combiner (sums for counts and running sums, min or max for an extreme)
// stages one delta row per group, writer and sign, holding the folded
// contributions, and the drain combines them per group; a writer's changes
// stay apart from the others', so a recompute's recorded snapshot skips
// exactly what it read.
#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <limits>
#include <vector>

#include "build_steps.h"
#include "catalog/migrations.h"
#include "catalog/model.h"
#include "engine_fixture.h"
#include "pipeline_steps.h"
#include "plan/bind.h"
#include "staging/stage_batch.h"

namespace trellis::test {
namespace {

constexpr const char* kSales = R"sql(
CREATE TABLE sales (id bigint PRIMARY KEY, g int NOT NULL, amount numeric(12,2), region text);
INSERT INTO sales SELECT i, i % 50, (i % 17) * 1.25 - 3, CASE WHEN i % 3 = 0 THEN 'n' END
FROM generate_series(1, 1000) i;
)sql";
// count(*), count(x), sum and avg over a numeric(12,2) with a WHERE: every
// state column additive (counts, running sums, counts per display scale).
constexpr const char* kTotals =
    "TRANSFORM sale_totals FROM sales SELECT g, count(*) AS n, count(region) AS regions, "
    "sum(amount) AS total, avg(amount) AS mean WHERE amount > -2 GROUP BY g";
constexpr const char* kTotalsTarget = "SELECT g, n, regions, total, mean FROM sale_totals";
constexpr const char* kTotalsQuery =
    "SELECT g, count(*), count(region), sum(amount), avg(amount) FROM sales WHERE amount > -2 "
    "GROUP BY g";

// A min and a max over the same WHERE, with a count (the row count keeps a
// group), and a max over text that is NULL in two rows of three.
constexpr const char* kExtremes =
    "TRANSFORM sale_extremes FROM sales SELECT g, count(*) AS n, min(amount) AS low, "
    "max(amount) AS high, max(region) AS top_region WHERE amount > -2 GROUP BY g";
constexpr const char* kExtremesTarget = "SELECT g, n, low, high, top_region FROM sale_extremes";
constexpr const char* kExtremesQuery =
    "SELECT g, count(*), min(amount), max(amount), max(region) FROM sales WHERE amount > -2 "
    "GROUP BY g";

long Differences(EngineFixture& f) { return SelectDifferences(f, kTotalsTarget, kTotalsQuery); }
long ExtremeDifferences(EngineFixture& f) {
  return SelectDifferences(f, kExtremesTarget, kExtremesQuery);
}

// Recomputes the groups of `keys` (a 2-D text[] literal) as charging and
// self-check do, which records the snapshot it read.
void RecomputeGroups(pg::Connection& conn, const std::string& keys,
                     const std::string& target = "sale_totals") {
  auto t = catalog::LoadTransform(conn, "trellis", target);
  REQUIRE(t.ok());
  auto plan = plan::Bind(t.value(), "trellis");
  REQUIRE(plan.ok());
  REQUIRE(conn.Query(plan.value()->RecomputeKeysSql(), {keys}).ok());
}

}  // namespace

TEST_CASE("many changes to one group stage one folded delta row per writer and sign",
          "[engine][staging][deltas][fold]") {
  EngineFixture f;
  auto s = DefineBuilt(f, kSales, kTotals);
  auto conn = ConnectBuilder(f);
  KeepOffRebuilds(f);
  // Group 7 has 20 rows. Writer A updates them all (20 old and 20 new
  // versions), B moves some across the WHERE and to group 8, C deletes
  // three, D inserts two into 7 and one into a new group 99; E updates
  // group 9's rows so that none passes the WHERE before or after.
  f.Sql("UPDATE sales SET amount = amount + 0.5 WHERE g = 7");  // A
  f.Sql(
      "UPDATE sales SET amount = -5, g = CASE WHEN id % 4 = 0 THEN 8 ELSE g END "  // B
      "WHERE g = 7 AND id < 400");
  f.Sql("DELETE FROM sales WHERE id IN (407, 457, 507)");  // C
  f.Sql(
      "INSERT INTO sales VALUES (2001, 7, 1.125, 'x'), (2002, 7, NULL, NULL), "  // D
      "(2003, 99, 4, 'y')");
  f.Sql("UPDATE sales SET amount = -9 WHERE g = 9 AND amount <= -2");  // E: nothing kept
  StageStep(*conn);
  // Every row folded; per group, one row per (writer, sign).
  CHECK(f.Scalar("SELECT bool_and(folded) FROM trellis.delta_rows") == "t");
  CHECK(f.Scalar("SELECT count(*) = count(DISTINCT (key, xid, sign)) FROM trellis.delta_rows") ==
        "t");
  // Group 7: A -1 and +1, B -1 (its new versions fail the WHERE or leave
  // for group 8), C -1, D +1.
  CHECK(f.Scalar("SELECT count(*) FROM trellis.delta_rows WHERE key = ARRAY['7']") == "5");
  CHECK(f.Scalar("SELECT string_agg(sign::text, ',' ORDER BY xid, sign) FROM trellis.delta_rows "
                 "WHERE key = ARRAY['7']") == "-1,1,-1,-1,1");
  CHECK(f.Scalar("SELECT count(*) FROM trellis.delta_rows WHERE key = ARRAY['99']") == "1");
  CHECK(f.Scalar("SELECT count(*) FROM trellis.delta_rows WHERE key = ARRAY['9']") == "0");
  // The pages count folded rows and are covered by them.
  CHECK(f.Scalar("SELECT sum(delta_count) = (SELECT count(*) FROM trellis.delta_rows) FROM "
                 "trellis.pages") == "t");
  CHECK(f.Scalar("SELECT bool_and(covered_width = (SELECT max(cardinality(row_values)) FROM "
                 "trellis.delta_rows)) FROM trellis.pages") == "t");
  DrainAllPages(*conn);
  CHECK(Differences(f) == 0);
  CHECK(f.Scalar("SELECT count(*) FROM trellis.delta_rows") == "0");

  // Every row of a group deleted, then the group comes back, in one batch.
  f.Sql("DELETE FROM sales WHERE g = 11");
  f.Sql("INSERT INTO sales VALUES (2004, 11, 2.5, NULL)");
  f.Sql("DELETE FROM sales WHERE g = 12");
  StageAndDrain(*conn);
  CHECK(Differences(f) == 0);
  CHECK(f.Scalar("SELECT count(*) FROM sale_totals WHERE g = 12") == "0");
}

TEST_CASE("a writer's folded rows a recompute saw for one group are skipped there only",
          "[engine][staging][deltas][fold]") {
  EngineFixture f;
  auto s = DefineBuilt(f, kSales, kTotals);
  auto conn = ConnectBuilder(f);
  KeepOffRebuilds(f);
  f.Sql("DELETE FROM trellis.group_snapshots");
  // Writer A changes groups 3 and 4, many rows each.
  f.Sql("UPDATE sales SET amount = amount + 1 WHERE g IN (3, 4)");
  // A recompute of group 3 alone reads A's rows there (as charging or
  // self-check does) and records so: A's folded rows of group 3 must be
  // skipped, those of group 4 applied.
  RecomputeGroups(*conn, "{{3}}");
  // Writer B after the record, in both groups; one batch stages A and B.
  f.Sql("UPDATE sales SET amount = amount * 2 WHERE g IN (3, 4) AND id < 500");
  StageStep(*conn);
  // Two groups, two writers, two signs: a fold across writers would give
  // A's changes B's xid and apply them to group 3 a second time.
  CHECK(f.Scalar("SELECT count(*) || ' ' || count(DISTINCT xid) FROM trellis.delta_rows") == "8 2");
  DrainAllPages(*conn);
  CHECK(Differences(f) == 0);
}

TEST_CASE("a min and a max fold per writer and sign and stay exact when the extreme moves",
          "[engine][staging][deltas][fold]") {
  EngineFixture f;
  auto s = DefineBuilt(f, kSales, kExtremes);
  auto conn = ConnectBuilder(f);
  KeepOffRebuilds(f);
  // Group 7 has 20 rows, amounts -3 to 17 (those at or below -2 fail the
  // WHERE). In one batch: A updates them all (moving both extremes); B
  // deletes the row holding the max and the one holding the min after A;
  // C inserts a new min, a new max far beyond it and a new top region; D
  // deletes C's new max again; E inserts into a new group 98.
  f.Sql("UPDATE sales SET amount = amount + 0.5 WHERE g = 7");  // A
  f.Sql(
      "DELETE FROM sales WHERE id IN ("  // B
      "(SELECT id FROM sales WHERE g = 7 AND amount > -2 ORDER BY amount DESC, id LIMIT 1), "
      "(SELECT id FROM sales WHERE g = 7 AND amount > -2 ORDER BY amount, id LIMIT 1))");
  f.Sql(
      "INSERT INTO sales VALUES (3001, 7, -1.875, 'zz'), (3002, 7, 100, NULL), "  // C
      "(3003, 7, -2.5, 'zzz')");
  f.Sql("DELETE FROM sales WHERE id = 3002");                                 // D
  f.Sql("INSERT INTO sales VALUES (3004, 98, 5, 'm'), (3005, 98, 6, NULL)");  // E
  StageStep(*conn);
  // Every row folded, one per (group, writer, sign): group 7 has A -1 and
  // +1, B -1, C +1 (3003 fails the WHERE, its top region is not counted),
  // D -1.
  CHECK(f.Scalar("SELECT bool_and(folded) FROM trellis.delta_rows") == "t");
  CHECK(f.Scalar("SELECT count(*) = count(DISTINCT (key, xid, sign)) FROM trellis.delta_rows") ==
        "t");
  CHECK(f.Scalar("SELECT string_agg(sign::text, ',' ORDER BY xid, sign) FROM trellis.delta_rows "
                 "WHERE key = ARRAY['7']") == "-1,1,-1,1,-1");
  CHECK(f.Scalar("SELECT count(*) FROM trellis.delta_rows WHERE key = ARRAY['98']") == "1");
  // B's folded row counts both its deletions (row_values: n's delta first).
  CHECK(f.Scalar("SELECT count(*) FROM trellis.delta_rows WHERE key = ARRAY['7'] AND sign = -1 "
                 "AND row_values[1] = '-2'") == "1");
  DrainAllPages(*conn);
  CHECK(ExtremeDifferences(f) == 0);
  CHECK(f.Scalar("SELECT low || ' ' || high || ' ' || top_region FROM sale_extremes WHERE g = 7") ==
        f.Scalar("SELECT min(amount) || ' ' || max(amount) || ' ' || max(region) FROM sales "
                 "WHERE g = 7 AND amount > -2"));
  CHECK(f.Scalar("SELECT count(*) FROM trellis.delta_rows") == "0");

  // A group's every row deleted by one writer and one row back by another;
  // another group's top rows deleted by one writer, and a second inserts
  // beyond what remains (a new max) and a new min.
  f.Sql("DELETE FROM sales WHERE g = 11");
  f.Sql("INSERT INTO sales VALUES (3006, 11, 2.5, NULL)");
  f.Sql("DELETE FROM sales WHERE g = 12 AND amount > 10");
  f.Sql("INSERT INTO sales VALUES (3007, 12, 12, 'q'), (3008, 12, -1.5, 'a')");
  StageAndDrain(*conn);
  CHECK(ExtremeDifferences(f) == 0);
}

TEST_CASE("a writer's folded extremes a recompute saw for one group are skipped there only",
          "[engine][staging][deltas][fold]") {
  EngineFixture f;
  auto s = DefineBuilt(f, kSales, kExtremes);
  auto conn = ConnectBuilder(f);
  KeepOffRebuilds(f);
  f.Sql("DELETE FROM trellis.group_snapshots");
  // Writer A deletes a row and raises the others in groups 3 and 4; a
  // recompute of group 3 reads A's rows there and records so.
  f.Sql("DELETE FROM sales WHERE id IN (53, 54)");
  f.Sql("UPDATE sales SET amount = amount + 1 WHERE g IN (3, 4)");
  RecomputeGroups(*conn, "{{3}}", "sale_extremes");
  // Writer B after the record, in both groups; one batch stages A and B.
  f.Sql("UPDATE sales SET amount = amount * 2 WHERE g IN (3, 4) AND id < 500");
  StageStep(*conn);
  CHECK(f.Scalar("SELECT bool_and(folded) FROM trellis.delta_rows") == "t");
  DrainAllPages(*conn);
  CHECK(ExtremeDifferences(f) == 0);
}

TEST_CASE("delta rows staged unfolded before catalog step 25 drain beside folded ones",
          "[engine][catalog][deltas][fold]") {
  EngineFixture f;
  auto s = DefineBuilt(f, kSales, kTotals);
  auto conn = ConnectBuilder(f);
  KeepOffRebuilds(f);
  // The catalog as step 24 left it, and a page an engine before folding
  // staged and did not drain: one row per version, the routed columns'
  // values in their order (transform_inputs.routed_columns).
  f.Sql(
      "ALTER TABLE trellis.delta_rows DROP COLUMN folded; "
      "UPDATE trellis.catalog_version SET version = 24");
  const std::string versions = R"sql(
WITH routed AS (SELECT i.routed_columns AS columns FROM trellis.transform_inputs i
                JOIN trellis.transforms t ON t.id = i.transform_id
                WHERE t.target_name = 'sale_totals'),
old AS (SELECT * FROM sales WHERE g = 5 AND id < 300),
new AS (UPDATE sales SET amount = amount + 3, region = 'z' WHERE g = 5 AND id < 300
        RETURNING *),
changes AS (SELECT -1 AS sign, to_jsonb(o) AS r FROM old o
            UNION ALL SELECT 1, to_jsonb(n) FROM new n),
page AS (INSERT INTO trellis.pages (transform_id, buckets, keys, key_count, delta_count,
                                    covered_width)
         SELECT t.id, ARRAY[abs(hashtext(ARRAY['5']::text::text) % 64)], ARRAY['5'], 1,
                (SELECT count(*) FROM changes), (SELECT cardinality(columns) FROM routed)
         FROM trellis.transforms t WHERE t.target_name = 'sale_totals' RETURNING id)
INSERT INTO trellis.delta_rows (page_id, xid, sign, key, row_values)
SELECT (SELECT id FROM page), pg_current_xact_id(), c.sign, ARRAY['5'],
       ARRAY(SELECT c.r ->> col FROM routed, unnest(routed.columns) WITH ORDINALITY AS u(col, n)
             ORDER BY u.n)
FROM changes c)sql";
  // The write, its capture rows taken away (the old engine staged them)
  // and its page, in one transaction.
  f.Sql("BEGIN; " + versions + "; DELETE FROM trellis.capture; COMMIT");
  CHECK(f.Scalar("SELECT count(*) FROM trellis.delta_rows") == "12");
  REQUIRE(catalog::Migrate(f.conn(), "trellis").ok());
  CHECK(f.Scalar("SELECT count(*) FILTER (WHERE NOT folded) FROM trellis.delta_rows") == "12");
  // After the upgrade, a write to the same group stages folded rows.
  f.Sql("UPDATE sales SET amount = amount - 1 WHERE g = 5");
  StageStep(*conn);
  CHECK(f.Scalar("SELECT count(*) FILTER (WHERE folded) FROM trellis.delta_rows") == "2");
  CHECK(f.Scalar("SELECT count(*) FROM trellis.pages") == "2");
  DrainAllPages(*conn);
  CHECK(f.Scalar("SELECT count(*) FROM trellis.delta_rows") == "0");
  CHECK(Differences(f) == 0);
}

TEST_CASE("a batch whose fold fails for a row stages its row versions unfolded",
          "[engine][staging][deltas][fold]") {
  EngineFixture f;
  auto s = DefineBuilt(f, kSales,
                       "TRANSFORM ratios FROM sales SELECT g, count(*) AS n, "
                       "sum(100 / amount) AS ratio GROUP BY g");
  auto conn = ConnectBuilder(f);
  KeepOffRebuilds(f);
  // Nothing fails: folded.
  f.Sql("UPDATE sales SET amount = 1 WHERE id = 1");
  StageStep(*conn);
  CHECK(f.Scalar("SELECT string_agg(DISTINCT folded::text, ',') FROM trellis.delta_rows") ==
        "true");
  f.Sql("DELETE FROM trellis.delta_rows; DELETE FROM trellis.pages");
  // The argument divides by zero for one new version: the fold (which
  // evaluates it at staging) fails, the group expressions do not, so the
  // batch stages row versions, for the drain to charge as before folding;
  // the transform is not rebuilt.
  const std::string status = "SELECT status FROM trellis.transforms WHERE target_name = 'ratios'";
  const std::string before = f.Scalar(status);
  f.Sql("UPDATE sales SET amount = 0 WHERE id = 2");
  StageStep(*conn);
  CHECK(f.Scalar("SELECT count(*) || ' ' || bool_or(folded) FROM trellis.delta_rows") == "2 false");
  CHECK(f.Scalar(status) == before);
}

// The staging and drain cost of a GROUP BY with a min and a max beside
// count, sum and avg (bench/README.md "Folded delta rows with min and
// max"): `engine_test "[staging_cost_extremes]"` prints the medians and the
// delta rows staged per batch.
TEST_CASE("staging cost of a plan with a min and a max", "[.][staging_cost_extremes]") {
  EngineFixture f;
  auto s = DefineBuilt(f, R"sql(
CREATE TABLE sales (id bigint PRIMARY KEY, g int NOT NULL, amount numeric(12, 2) NOT NULL);
INSERT INTO sales SELECT i, 1 + i % 2000, i % 997 FROM generate_series(1, 200000) i;
)sql",
                       "TRANSFORM sale_totals FROM sales SELECT g, count(*) AS n, "
                       "sum(amount) AS total, avg(amount) AS mean, min(amount) AS low, "
                       "max(amount) AS high GROUP BY g");
  auto conn = ConnectBuilder(f);
  KeepOffRebuilds(f);
  for (int changed : {200, 2000, 20000}) {
    std::vector<double> stage_ms, drain_ms;
    std::string rows;
    for (int round = 0; round < 5; ++round) {
      f.Sql("UPDATE sales SET amount = amount + 1 WHERE id % (200000 / " + std::to_string(changed) +
            ") = " + std::to_string(round));
      const auto t0 = std::chrono::steady_clock::now();
      auto staged =
          staging::StageBatch(*conn, "trellis", 1000000, 1000, std::numeric_limits<long>::max());
      REQUIRE(staged.ok());
      const auto t1 = std::chrono::steady_clock::now();
      rows = f.Scalar("SELECT count(*) FROM trellis.delta_rows");
      const auto t2 = std::chrono::steady_clock::now();
      DrainAllPages(*conn);
      const auto t3 = std::chrono::steady_clock::now();
      stage_ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
      drain_ms.push_back(std::chrono::duration<double, std::milli>(t3 - t2).count());
    }
    std::sort(stage_ms.begin(), stage_ms.end());
    std::sort(drain_ms.begin(), drain_ms.end());
    std::printf(
        "%d updates (%d versions): %s delta rows, staging median %.1f ms, drain median %.1f ms\n",
        changed, 2 * changed, rows.c_str(), stage_ms[2], drain_ms[2]);
  }
  CHECK(SelectDifferences(f, "SELECT g, n, total, mean, low, high FROM sale_totals",
                          "SELECT g, count(*), sum(amount), avg(amount), min(amount), max(amount) "
                          "FROM sales GROUP BY g") == 0);
}

}  // namespace trellis::test
