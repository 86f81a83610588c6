// Golden tests of the group plan's aggregate rules and statements
// (engine/src/plan/aggregates, spec/engine.md "Aggregates"): the SQL each
// renders for a fixture, with no database. group_rules_pg_test runs the same
// statements against PostgreSQL.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "plan/aggregates/group_sql.h"
#include "plan/aggregates/rules.h"
#include "plan/aggregates/source_index_gap.h"
#include "plan/template.h"

namespace trellis::plan::aggregates {
namespace {

using grammar::AggregateCall;
using grammar::AggregateFunction;

AggregateInput Input(AggregateFunction function, std::optional<std::string> argument,
                     std::string column, int ordinal, SumKind sum = SumKind::kExact) {
  const std::string arg = argument.value_or("");
  return AggregateInput{AggregateCall{function, argument, false, {}},
                        std::move(column),
                        "__trellis_" + std::to_string(ordinal) + "_",
                        arg,
                        "__trellis_ch.\"a" + std::to_string(ordinal) + "\"",
                        sum,
                        {},
                        std::nullopt};
}

// Every fragment of a rule, one per line, for golden comparisons.
std::string Describe(const AggregateRule& rule) {
  std::string out;
  for (const auto& c : rule.columns) {
    out += c.name + "\n";
    out += "  recompute: " + c.Recompute() + "\n";
    if (!c.delta_template.empty()) out += "  delta: " + c.Delta() + "\n";
    out += "  update: " + c.Update("<recomputed>") + "\n";
    out += "  insert: " + c.Insert("<recomputed>") + "\n";
  }
  return out;
}

TEST_CASE("SumKindOf keeps integers and numerics of any typmod by deltas", "[group][rules]") {
  for (const char* exact : {"smallint", "integer", "bigint"}) {
    CHECK(SumKindOf(exact) == SumKind::kExact);
  }
  for (const char* scaled : {"numeric", "numeric(12,2)", "numeric(5,0)", "numeric(5,-2)"}) {
    CHECK(SumKindOf(scaled) == SumKind::kScaled);
  }
  for (const char* inexact :
       {"double precision", "real", "money", "interval", "text", "numeric(12,2)[]", "bigint[]"}) {
    CHECK(SumKindOf(inexact) == SumKind::kRecomputed);
  }
}

TEST_CASE("count(*) and count(x) are signed counts", "[group][rules]") {
  CHECK(Describe(RuleFor(Input(AggregateFunction::kCount, std::nullopt, "n", 1))) ==
        "n\n"
        "  recompute: count(*)\n"
        "  delta: sum(__trellis_ch.sign)::bigint\n"
        "  update: __trellis_t.\"n\" + __trellis_d.\"n\"\n"
        "  insert: __trellis_d.\"n\"\n");
  CHECK(Describe(RuleFor(Input(AggregateFunction::kCount, "o.note", "noted", 2))) ==
        "noted\n"
        "  recompute: count((o.note))\n"
        "  delta: coalesce(sum(__trellis_ch.sign) FILTER (WHERE __trellis_ch.\"a2\" IS NOT "
        "NULL), 0)::bigint\n"
        "  update: __trellis_t.\"noted\" + __trellis_d.\"noted\"\n"
        "  insert: __trellis_d.\"noted\"\n");
}

TEST_CASE("sum keeps a non-NULL count so that a sum of no values is NULL", "[group][rules]") {
  const AggregateRule rule = RuleFor(Input(AggregateFunction::kSum, "amount", "total", 3));
  CHECK(rule.upkeep == Upkeep::kDelta);
  CHECK(Describe(rule) == R"(total
  recompute: sum((amount))
  update: CASE WHEN __trellis_t."__trellis_3_n" + __trellis_d."__trellis_3_n" = 0 THEN NULL ELSE __trellis_t."__trellis_3_sum" + __trellis_d."__trellis_3_sum" END
  insert: CASE WHEN __trellis_d."__trellis_3_n" = 0 THEN NULL ELSE __trellis_d."__trellis_3_sum" END
__trellis_3_sum
  recompute: coalesce(sum((amount)), 0)
  delta: coalesce(sum(__trellis_ch."a3") FILTER (WHERE __trellis_ch.sign > 0), 0) - coalesce(sum(__trellis_ch."a3") FILTER (WHERE __trellis_ch.sign < 0), 0)
  update: __trellis_t."__trellis_3_sum" + __trellis_d."__trellis_3_sum"
  insert: __trellis_d."__trellis_3_sum"
__trellis_3_n
  recompute: count((amount))
  delta: coalesce(sum(__trellis_ch.sign) FILTER (WHERE __trellis_ch."a3" IS NOT NULL), 0)::bigint
  update: __trellis_t."__trellis_3_n" + __trellis_d."__trellis_3_n"
  insert: __trellis_d."__trellis_3_n"
)");
}

TEST_CASE("avg is kept as sum and count and divided as PostgreSQL does", "[group][rules]") {
  const AggregateRule rule = RuleFor(Input(AggregateFunction::kAvg, "amount", "mean", 4));
  REQUIRE(rule.columns.size() == 3);
  CHECK(rule.columns[0].name == "mean");
  CHECK(rule.columns[0].delta_template.empty());
  CHECK(rule.columns[0].Update("") ==
        "CASE WHEN __trellis_t.\"__trellis_4_n\" + __trellis_d.\"__trellis_4_n\" = 0 THEN NULL "
        "ELSE (__trellis_t.\"__trellis_4_sum\" + "
        "__trellis_d.\"__trellis_4_sum\")::numeric / (__trellis_t.\"__trellis_4_n\" + "
        "__trellis_d.\"__trellis_4_n\") END");
  CHECK(rule.columns[0].Insert("") ==
        "CASE WHEN __trellis_d.\"__trellis_4_n\" = 0 THEN NULL ELSE "
        "(__trellis_d.\"__trellis_4_sum\")::numeric / (__trellis_d.\"__trellis_4_n\") END");
  CHECK(rule.columns[1].name == "__trellis_4_sum");
  CHECK(rule.columns[2].name == "__trellis_4_n");
}

TEST_CASE("a numeric sum is rounded to the display scale its counts say", "[group][rules]") {
  const AggregateRule rule =
      RuleFor(Input(AggregateFunction::kSum, "price", "total", 6, SumKind::kScaled));
  REQUIRE(rule.columns.size() == 4);
  CHECK(rule.upkeep == Upkeep::kDelta);
  const StateColumn& visible = rule.columns[0];
  const StateColumn& counts = rule.columns[3];
  CHECK(counts.name == "__trellis_6_scales");
  CHECK(counts.additive);
  // NaN, the infinities and scales of 16 or more go to the last count, and
  // a group holding one is recomputed.
  CHECK(visible.RecomputeWhen() ==
        "coalesce(__trellis_t.\"__trellis_6_scales\"[17], 0) + "
        "__trellis_d.\"__trellis_6_scales\"[17] <> 0");
  CHECK_THAT(
      visible.Update("R"),
      Catch::StartsWith("CASE WHEN coalesce(__trellis_t.\"__trellis_6_scales\"[17], 0) + "
                        "__trellis_d.\"__trellis_6_scales\"[17] <> 0 THEN R WHEN "
                        "__trellis_t.\"__trellis_6_n\" + __trellis_d.\"__trellis_6_n\" = 0 "
                        "THEN NULL ELSE pg_catalog.round(__trellis_t.\"__trellis_6_sum\" + "
                        "__trellis_d.\"__trellis_6_sum\", (CASE WHEN "
                        "coalesce(__trellis_t.\"__trellis_6_scales\"[16], 0) + "
                        "coalesce(__trellis_d.\"__trellis_6_scales\"[16], 0) <> 0 THEN 15 WHEN"));
  // The largest scale counted, from scale 15 down to 0: plain expressions,
  // no subquery per group.
  CHECK_THAT(visible.Update("R"),
             Catch::EndsWith("coalesce(__trellis_d.\"__trellis_6_scales\"[1], 0) <> 0 THEN 0 "
                             "END)) END"));
  CHECK_THAT(rule.columns[1].Recompute(),
             Catch::Equals("coalesce(sum((price)) FILTER (WHERE true AND "
                           "pg_catalog.scale((price)) < 16), 0)"));
  CHECK_THAT(counts.Recompute(), Catch::StartsWith("ARRAY[count((price)) FILTER (WHERE "
                                                   "pg_catalog.scale((price)) = 0), "));
  CHECK(counts.DeltaIsZero() == "0 = ALL (__trellis_d.\"__trellis_6_scales\")");
  CHECK(rule.columns[1].IsZero() ==
        "__trellis_t.\"__trellis_6_sum\" + __trellis_d.\"__trellis_6_sum\" = 0");
}

TEST_CASE("sum and avg over inexact types are recomputed per touched group", "[group][rules]") {
  const AggregateRule rule =
      RuleFor(Input(AggregateFunction::kAvg, "weight", "w", 5, SumKind::kRecomputed));
  CHECK(rule.upkeep == Upkeep::kRecompute);
  CHECK(rule.columns[0].RecomputeWhen() == "true");
  CHECK(Describe(rule) ==
        "w\n"
        "  recompute: avg((weight))\n"
        "  update: <recomputed>\n"
        "  insert: <recomputed>\n");
}

TEST_CASE("min and max look at the source when a change reaches the extreme", "[group][rules]") {
  CHECK(Describe(RuleFor(Input(AggregateFunction::kMin, "placed_at", "first", 6))) ==
        "first\n"
        "  recompute: min((placed_at))\n"
        "  delta: min(__trellis_ch.\"a6\")\n"
        "  update: CASE WHEN __trellis_d.\"first\" IS NOT NULL AND (__trellis_t.\"first\" IS "
        "NULL OR __trellis_d.\"first\" <= __trellis_t.\"first\") THEN <recomputed> ELSE "
        "__trellis_t.\"first\" END\n"
        "  insert: <recomputed>\n");
  const AggregateRule max = RuleFor(Input(AggregateFunction::kMax, "placed_at", "last", 7));
  CHECK(max.upkeep == Upkeep::kExtreme);
  CHECK(max.columns[0].Delta() == "max(__trellis_ch.\"a7\")");
  CHECK_THAT(max.columns[0].Update("R"),
             Catch::Contains("__trellis_d.\"last\" >= __trellis_t.\"last\") THEN R ELSE"));
  // The same condition says which groups the apply recomputes.
  CHECK(max.columns[0].RecomputeWhen() ==
        "__trellis_d.\"last\" IS NOT NULL AND (__trellis_t.\"last\" IS NULL OR "
        "__trellis_d.\"last\" >= __trellis_t.\"last\")");
}

TEST_CASE("bool_and and bool_or are counts of the deciding value", "[group][rules]") {
  const AggregateRule all = RuleFor(Input(AggregateFunction::kBoolAnd, "paid", "all_paid", 8));
  REQUIRE(all.columns.size() == 3);
  CHECK(all.columns[0].Update("") ==
        "CASE WHEN __trellis_t.\"__trellis_8_n\" + __trellis_d.\"__trellis_8_n\" = 0 THEN NULL "
        "ELSE __trellis_t.\"__trellis_8_false\" + __trellis_d.\"__trellis_8_false\" = 0 END");
  CHECK(all.columns[1].Recompute() == "count(*) FILTER (WHERE (paid) IS FALSE)");
  CHECK(all.columns[1].Delta() ==
        "coalesce(sum(__trellis_ch.sign) FILTER (WHERE __trellis_ch.\"a8\" IS FALSE), 0)::bigint");
  const AggregateRule any = RuleFor(Input(AggregateFunction::kBoolOr, "paid", "any_paid", 9));
  CHECK(any.columns[0].Insert("") ==
        "CASE WHEN __trellis_d.\"__trellis_9_n\" = 0 THEN NULL ELSE "
        "__trellis_d.\"__trellis_9_true\" > 0 END");
}

TEST_CASE("a user's argument is never scanned for slots", "[group][rules]") {
  const AggregateRule rule =
      RuleFor(Input(AggregateFunction::kMax, "x || '{recomputed}{t}'", "m", 1));
  CHECK(rule.columns[0].Recompute() == "max((x || '{recomputed}{t}'))");
  CHECK(rule.columns[0].Update("R") ==
        "CASE WHEN __trellis_d.\"m\" IS NOT NULL AND (__trellis_t.\"m\" IS NULL OR "
        "__trellis_d.\"m\" >= __trellis_t.\"m\") THEN R ELSE __trellis_t.\"m\" END");
}

// ------------------------------------------------------------- statements

GroupShape OrderTotals() {
  GroupShape shape;
  shape.target = "\"public\".\"order_totals\"";
  shape.source = "\"public\".\"orders\"";
  shape.alias = "o";
  shape.where = "o.status <> 'void'";
  shape.keys = {{"customer_id", "o.customer_id"}};
  shape.aggregates = {Input(AggregateFunction::kCount, std::nullopt, "n", 1),
                      Input(AggregateFunction::kSum, "o.amount", "total", 2),
                      Input(AggregateFunction::kMax, "o.placed_at", "last", 3)};
  return shape;
}

TEST_CASE("the target keeps each aggregate's columns and the row count", "[group][sql]") {
  std::vector<std::string> names;
  for (const auto& c : StateColumns(OrderTotals())) names.push_back(c.name);
  CHECK(names == std::vector<std::string>{"n", "total", "__trellis_2_sum", "__trellis_2_n", "last",
                                          "__trellis_rows"});
}

TEST_CASE("keys that cannot be NULL match with a plain =", "[group][sql]") {
  CHECK(KeysMatch({"a.x", "a.y"}, {"b.x", "b.y"}, {false, true}) ==
        "b.x = a.x AND (b.y = a.y OR (b.y IS NULL AND a.y IS NULL))");
}

TEST_CASE("keys match NULL-safely, one OR per key", "[group][sql]") {
  CHECK(KeysMatch({"a.x", "a.y"}, {"b.x", "b.y"}) ==
        "(b.x = a.x OR (b.x IS NULL AND a.x IS NULL)) AND (b.y = a.y OR (b.y IS NULL AND a.y IS "
        "NULL))");
}

TEST_CASE("recompute of dirty groups upserts what exists and deletes what is gone",
          "[group][sql]") {
  // The whole statement is golden-tested through the group plan
  // (golden/group_by/recompute_pages.sql); here, its parts.
  const std::string sql = RecomputeGroupsSql(OrderTotals(), "dirty");
  CHECK_THAT(sql, Catch::StartsWith("WITH __trellis_dirty AS MATERIALIZED (\n  SELECT * FROM "
                                    "dirty AS d\n), fresh AS (\n  SELECT (o.customer_id) AS "
                                    "\"customer_id\", count(*) AS \"n\""));
  // The dirty groups' rows first, behind OFFSET 0; the WHERE over them
  // only. Groups with non-NULL keys are found with a plain `=` (an index or
  // hash semi-join); those with a NULL key by a second branch that runs only
  // when some dirty key is NULL.
  CHECK_THAT(sql, Catch::Contains("FROM (SELECT * FROM \"public\".\"orders\" AS \"o\" WHERE "
                                  "EXISTS (SELECT 1 FROM __trellis_dirty AS __trellis_k WHERE "
                                  "(o.customer_id) = __trellis_k.__trellis_key_1) OFFSET 0) AS "
                                  "\"o\"\n  WHERE (o.status <> 'void')\n  GROUP BY "
                                  "(o.customer_id)\n  UNION ALL\n"));
  CHECK_THAT(sql, Catch::Contains("WHERE ((o.customer_id) IS NULL) AND EXISTS (SELECT 1 FROM "
                                  "__trellis_dirty AS __trellis_k WHERE "
                                  "(__trellis_k.__trellis_key_1 IS NULL)) AND EXISTS"));
  CHECK_THAT(sql, Catch::Contains("), gone_null AS (\n  DELETE FROM"));
  CHECK_THAT(sql, Catch::Contains("DELETE FROM \"public\".\"order_totals\" AS __trellis_t "
                                  "USING __trellis_dirty AS __trellis_k"));
  CHECK_THAT(sql, Catch::Contains("ON CONFLICT (\"customer_id\") DO UPDATE SET \"n\" = "
                                  "EXCLUDED.\"n\""));
  CHECK_THAT(sql, Catch::EndsWith("SELECT (SELECT count(*) FROM written), (SELECT count(*) "
                                  "FROM gone) + (SELECT count(*) FROM gone_null)"));
  // Keys that cannot be NULL need no second branch.
  GroupShape never_null = OrderTotals();
  never_null.keys[0].nullable = false;
  const std::string plain = RecomputeGroupsSql(never_null, "dirty");
  CHECK_THAT(plain, !Catch::Contains("UNION ALL") && !Catch::Contains("gone_null"));
}

TEST_CASE("without GROUP BY the one row is upserted", "[group][sql]") {
  GroupShape shape = OrderTotals();
  shape.keys.clear();
  shape.aggregates.resize(1);
  // Upserted on the hidden key, so that a row that is missing is made again.
  CHECK(RecomputeGroupsSql(shape, "") ==
        "WITH written AS (\n  INSERT INTO \"public\".\"order_totals\" (\"__trellis_all\", "
        "\"n\", \"__trellis_rows\")\n  SELECT true, __trellis_f.* FROM (SELECT count(*) AS "
        "\"n\", count(*) AS \"__trellis_rows\"\n  FROM \"public\".\"orders\" AS \"o\"\n  WHERE "
        "(o.status <> 'void')) AS __trellis_f\n  ON CONFLICT (\"__trellis_all\") DO UPDATE SET "
        "\"n\" = EXCLUDED.\"n\", \"__trellis_rows\" = EXCLUDED.\"__trellis_rows\"\n  RETURNING "
        "1\n)\nSELECT (SELECT count(*) FROM written), 0::bigint");
  // With dirty keys, only when there are any.
  CHECK_THAT(RecomputeGroupsSql(shape, "dirty"),
             Catch::Contains(" AS __trellis_f\n  WHERE EXISTS (SELECT 1 FROM dirty AS d)\n  ON "
                             "CONFLICT"));
}

TEST_CASE("changes fold into one delta row per group", "[group][sql]") {
  CHECK(
      FoldChangesSql(OrderTotals(), "changes") ==
      R"sql(SELECT __trellis_ch."customer_id", sum(__trellis_ch.sign)::bigint AS "n", coalesce(sum(__trellis_ch."a2") FILTER (WHERE __trellis_ch.sign > 0), 0) - coalesce(sum(__trellis_ch."a2") FILTER (WHERE __trellis_ch.sign < 0), 0) AS "__trellis_2_sum", coalesce(sum(__trellis_ch.sign) FILTER (WHERE __trellis_ch."a2" IS NOT NULL), 0)::bigint AS "__trellis_2_n", max(__trellis_ch."a3") AS "last", sum(__trellis_ch.sign)::bigint AS "__trellis_rows" FROM changes AS __trellis_ch GROUP BY __trellis_ch."customer_id")sql");
  GroupShape whole = OrderTotals();
  whole.keys.clear();
  CHECK_THAT(FoldChangesSql(whole, "changes"),
             Catch::EndsWith("FROM changes AS __trellis_ch HAVING count(*) > 0"));
}

TEST_CASE("deltas update existing groups, insert new ones, delete emptied ones, in one statement",
          "[group][sql]") {
  GroupShape shape = OrderTotals();
  shape.keys[0].nullable = false;
  // One pre-image: each delta row with its group's target row, and what
  // happens to the group; the flagged groups' max, recomputed by one
  // statement reading only their rows; then the three disjoint actions.
  CHECK(ApplyDeltasSql(shape, "deltas") ==
        R"sql(WITH __trellis_deltas AS MATERIALIZED (
  SELECT * FROM deltas AS d
), __trellis_pre AS MATERIALIZED (
  SELECT __trellis_d.*, __trellis_t."__trellis_rows" IS NOT NULL AS __trellis_found, (__trellis_t."n" + __trellis_d."n" = 0 AND __trellis_t."__trellis_2_sum" + __trellis_d."__trellis_2_sum" = 0 AND __trellis_t."__trellis_2_n" + __trellis_d."__trellis_2_n" = 0 AND __trellis_t."__trellis_rows" + __trellis_d."__trellis_rows" = 0) IS TRUE AS __trellis_emptied, CASE WHEN __trellis_t."__trellis_rows" IS NOT NULL THEN (NOT (__trellis_t."n" + __trellis_d."n" = 0 AND __trellis_t."__trellis_2_sum" + __trellis_d."__trellis_2_sum" = 0 AND __trellis_t."__trellis_2_n" + __trellis_d."__trellis_2_n" = 0 AND __trellis_t."__trellis_rows" + __trellis_d."__trellis_rows" = 0) IS TRUE AND ((__trellis_d."last" IS NOT NULL AND (__trellis_t."last" IS NULL OR __trellis_d."last" >= __trellis_t."last")))) IS TRUE ELSE (__trellis_d."n" = 0 AND __trellis_d."__trellis_2_sum" = 0 AND __trellis_d."__trellis_2_n" = 0 AND __trellis_d."__trellis_rows" = 0) IS NOT TRUE END AS __trellis_flagged, greatest(coalesce(__trellis_t."__trellis_rows", 0) + __trellis_d."__trellis_rows", 0) AS __trellis_size
    FROM __trellis_deltas AS __trellis_d LEFT JOIN LATERAL (SELECT * FROM "public"."order_totals" AS __trellis_t WHERE __trellis_t."customer_id" = __trellis_d."customer_id" OFFSET 0) AS __trellis_t ON true
), __trellis_extremes AS (
  SELECT (o.customer_id) AS "customer_id", max((o.placed_at)) AS "last"
  FROM (SELECT __trellis_d."customer_id" AS __trellis_key_1 FROM __trellis_pre AS __trellis_d WHERE __trellis_d.__trellis_flagged AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_index AS i WHERE i.indrelid = pg_catalog.to_regclass('"public"."orders"') AND i.indisvalid AND i.indnkeyatts >= 2 AND i.indkey[0] = (SELECT a.attnum FROM pg_catalog.pg_attribute AS a WHERE a.attrelid = i.indrelid AND a.attname = 'customer_id') AND i.indkey[1] = (SELECT a.attnum FROM pg_catalog.pg_attribute AS a WHERE a.attrelid = i.indrelid AND a.attname = 'placed_at')) AND NOT (coalesce((SELECT sum(__trellis_d.__trellis_size) FROM __trellis_pre AS __trellis_d WHERE __trellis_d.__trellis_flagged) > (SELECT nullif(greatest(reltuples, 0), 0) / 10 FROM pg_catalog.pg_class WHERE oid = pg_catalog.to_regclass('"public"."orders"')), false) AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_index AS i WHERE i.indrelid = pg_catalog.to_regclass('"public"."orders"') AND i.indisvalid AND i.indnkeyatts >= 2 AND i.indkey[0] = (SELECT a.attnum FROM pg_catalog.pg_attribute AS a WHERE a.attrelid = i.indrelid AND a.attname = 'customer_id') AND i.indkey[1] = (SELECT a.attnum FROM pg_catalog.pg_attribute AS a WHERE a.attrelid = i.indrelid AND a.attname = 'placed_at')))) AS __trellis_k CROSS JOIN LATERAL (SELECT * FROM "public"."orders" AS "o" WHERE (o.customer_id) = __trellis_k.__trellis_key_1 OFFSET 0) AS "o"
  WHERE (o.status <> 'void')
  GROUP BY (o.customer_id)
  UNION ALL
  SELECT (o.customer_id) AS "customer_id", max((o.placed_at)) AS "last"
  FROM (SELECT * FROM "public"."orders" AS "o" WHERE (coalesce((SELECT sum(__trellis_d.__trellis_size) FROM __trellis_pre AS __trellis_d WHERE __trellis_d.__trellis_flagged) > (SELECT nullif(greatest(reltuples, 0), 0) / 10 FROM pg_catalog.pg_class WHERE oid = pg_catalog.to_regclass('"public"."orders"')), false) AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_index AS i WHERE i.indrelid = pg_catalog.to_regclass('"public"."orders"') AND i.indisvalid AND i.indnkeyatts >= 2 AND i.indkey[0] = (SELECT a.attnum FROM pg_catalog.pg_attribute AS a WHERE a.attrelid = i.indrelid AND a.attname = 'customer_id') AND i.indkey[1] = (SELECT a.attnum FROM pg_catalog.pg_attribute AS a WHERE a.attrelid = i.indrelid AND a.attname = 'placed_at'))) AND EXISTS (SELECT 1 FROM (SELECT __trellis_d."customer_id" AS __trellis_key_1 FROM __trellis_pre AS __trellis_d WHERE __trellis_d.__trellis_flagged) AS __trellis_k WHERE (o.customer_id) = __trellis_k.__trellis_key_1) OFFSET 0) AS "o"
  WHERE (o.status <> 'void')
  GROUP BY (o.customer_id)
), __trellis_updated AS (
  UPDATE "public"."order_totals" AS __trellis_t SET "n" = __trellis_t."n" + __trellis_d."n", "total" = CASE WHEN __trellis_t."__trellis_2_n" + __trellis_d."__trellis_2_n" = 0 THEN NULL ELSE __trellis_t."__trellis_2_sum" + __trellis_d."__trellis_2_sum" END, "__trellis_2_sum" = __trellis_t."__trellis_2_sum" + __trellis_d."__trellis_2_sum", "__trellis_2_n" = __trellis_t."__trellis_2_n" + __trellis_d."__trellis_2_n", "last" = CASE WHEN __trellis_d."last" IS NOT NULL AND (__trellis_t."last" IS NULL OR __trellis_d."last" >= __trellis_t."last") THEN CASE WHEN EXISTS (SELECT 1 FROM pg_catalog.pg_index AS i WHERE i.indrelid = pg_catalog.to_regclass('"public"."orders"') AND i.indisvalid AND i.indnkeyatts >= 2 AND i.indkey[0] = (SELECT a.attnum FROM pg_catalog.pg_attribute AS a WHERE a.attrelid = i.indrelid AND a.attname = 'customer_id') AND i.indkey[1] = (SELECT a.attnum FROM pg_catalog.pg_attribute AS a WHERE a.attrelid = i.indrelid AND a.attname = 'placed_at')) THEN (SELECT max((o.placed_at)) FROM "public"."orders" AS "o" WHERE (o.customer_id) = __trellis_d."customer_id" AND CASE WHEN (o.customer_id) = __trellis_d."customer_id" THEN (o.status <> 'void') ELSE false END) ELSE __trellis_x."last" END ELSE __trellis_t."last" END, "__trellis_rows" = __trellis_t."__trellis_rows" + __trellis_d."__trellis_rows"
    FROM __trellis_pre AS __trellis_d LEFT JOIN __trellis_extremes AS __trellis_x ON __trellis_x."customer_id" = __trellis_d."customer_id"
    WHERE __trellis_t."customer_id" = __trellis_d."customer_id" AND __trellis_d.__trellis_found AND NOT __trellis_d.__trellis_emptied
  RETURNING 1
), __trellis_inserted AS (
  INSERT INTO "public"."order_totals" ("customer_id", "n", "total", "__trellis_2_sum", "__trellis_2_n", "last", "__trellis_rows")
    SELECT __trellis_d."customer_id", __trellis_d."n", CASE WHEN __trellis_d."__trellis_2_n" = 0 THEN NULL ELSE __trellis_d."__trellis_2_sum" END, __trellis_d."__trellis_2_sum", __trellis_d."__trellis_2_n", CASE WHEN EXISTS (SELECT 1 FROM pg_catalog.pg_index AS i WHERE i.indrelid = pg_catalog.to_regclass('"public"."orders"') AND i.indisvalid AND i.indnkeyatts >= 2 AND i.indkey[0] = (SELECT a.attnum FROM pg_catalog.pg_attribute AS a WHERE a.attrelid = i.indrelid AND a.attname = 'customer_id') AND i.indkey[1] = (SELECT a.attnum FROM pg_catalog.pg_attribute AS a WHERE a.attrelid = i.indrelid AND a.attname = 'placed_at')) THEN (SELECT max((o.placed_at)) FROM "public"."orders" AS "o" WHERE (o.customer_id) = __trellis_d."customer_id" AND CASE WHEN (o.customer_id) = __trellis_d."customer_id" THEN (o.status <> 'void') ELSE false END) ELSE __trellis_x."last" END, __trellis_d."__trellis_rows"
    FROM __trellis_pre AS __trellis_d LEFT JOIN __trellis_extremes AS __trellis_x ON __trellis_x."customer_id" = __trellis_d."customer_id"
    WHERE NOT __trellis_d.__trellis_found AND (__trellis_d."n" = 0 AND __trellis_d."__trellis_2_sum" = 0 AND __trellis_d."__trellis_2_n" = 0 AND __trellis_d."__trellis_rows" = 0) IS NOT TRUE
  RETURNING 1
), __trellis_deleted AS (
  DELETE FROM "public"."order_totals" AS __trellis_t USING __trellis_pre AS __trellis_d
    WHERE __trellis_t."customer_id" = __trellis_d."customer_id" AND __trellis_d.__trellis_emptied
  RETURNING 1
)
SELECT (SELECT count(*) FROM __trellis_updated) + (SELECT count(*) FROM __trellis_inserted), (SELECT count(*) FROM __trellis_deleted))sql");
}

TEST_CASE("deltas of groups with a NULL key take a branch of their own", "[group][sql]") {
  const std::string sql = ApplyDeltasSql(OrderTotals(), "deltas");
  // The plain branch looks each group up by `=` and leaves NULL keys out...
  CHECK_THAT(sql,
             Catch::Contains("LEFT JOIN LATERAL (SELECT * FROM \"public\".\"order_totals\" "
                             "AS __trellis_t WHERE __trellis_t.\"customer_id\" = "
                             "__trellis_d.\"customer_id\" OFFSET 0) AS __trellis_t ON true\n"
                             "    WHERE NOT (__trellis_d.\"customer_id\" IS NULL)\n  UNION ALL"));
  // ...which the second branch matches NULL-safely, only among target rows
  // with a NULL key, and only when some delta row has one.
  CHECK_THAT(sql,
             Catch::Contains("ON (__trellis_d.\"customer_id\" IS NULL) AND "
                             "(__trellis_t.\"customer_id\" IS NULL) AND "
                             "(__trellis_t.\"customer_id\" = __trellis_d.\"customer_id\" OR "
                             "(__trellis_t.\"customer_id\" IS NULL AND "
                             "__trellis_d.\"customer_id\" IS NULL))\n    WHERE EXISTS (SELECT 1 "
                             "FROM __trellis_deltas AS __trellis_d WHERE "
                             "(__trellis_d.\"customer_id\" IS NULL))"));
  for (const char* cte : {"), __trellis_updated_null AS (", "), __trellis_deleted_null AS ("}) {
    CHECK_THAT(sql, Catch::Contains(cte));
  }
  // The recompute of the flagged extremes: a lookup per group with non-NULL
  // keys, or one scan when those groups hold more rows than the source has
  // pages; a gated branch for groups with a NULL key; joined back by
  // arrays, whose equality holds for two NULLs.
  // A lone max over columns: when an index on (customer_id, placed_at)
  // exists, the update looks each group without a NULL key up itself, one
  // index entry each, and the two branches below read nothing.
  const std::string indexed =
      "EXISTS (SELECT 1 FROM pg_catalog.pg_index AS i WHERE i.indrelid = "
      "pg_catalog.to_regclass('\"public\".\"orders\"') AND i.indisvalid AND i.indnkeyatts >= 2 "
      "AND i.indkey[0] = (SELECT a.attnum FROM pg_catalog.pg_attribute AS a WHERE a.attrelid = "
      "i.indrelid AND a.attname = 'customer_id') AND i.indkey[1] = (SELECT a.attnum FROM "
      "pg_catalog.pg_attribute AS a WHERE a.attrelid = i.indrelid AND a.attname = 'placed_at'))";
  const std::string scan =
      "(coalesce((SELECT sum(__trellis_d.__trellis_size) FROM __trellis_pre AS __trellis_d "
      "WHERE __trellis_d.__trellis_flagged AND NOT (__trellis_d.\"customer_id\" IS NULL)) > "
      "(SELECT nullif(greatest(reltuples, 0), 0) / 10 FROM pg_catalog.pg_class WHERE oid = "
      "pg_catalog.to_regclass('\"public\".\"orders\"')), false) AND NOT " +
      indexed + ")";
  CHECK_THAT(sql, Catch::Contains("WHERE __trellis_d.__trellis_flagged AND NOT "
                                  "(__trellis_d.\"customer_id\" IS NULL) AND NOT " +
                                  indexed + " AND NOT " + scan +
                                  ") AS __trellis_k CROSS JOIN LATERAL (SELECT * FROM "
                                  "\"public\".\"orders\" AS \"o\" WHERE (o.customer_id) = "
                                  "__trellis_k.__trellis_key_1 OFFSET 0) AS \"o\""));
  CHECK_THAT(sql, Catch::Contains("FROM (SELECT * FROM \"public\".\"orders\" AS \"o\" WHERE " +
                                  scan + " AND EXISTS (SELECT 1 FROM (SELECT"));
  CHECK_THAT(sql, Catch::Contains(
                      "CASE WHEN " + indexed +
                      " AND NOT (__trellis_d.\"customer_id\" IS NULL) THEN (SELECT "
                      "max((o.placed_at)) FROM \"public\".\"orders\" AS \"o\" WHERE "
                      "(o.customer_id) = __trellis_d.\"customer_id\" AND CASE WHEN "
                      "(o.customer_id) = __trellis_d.\"customer_id\" THEN (o.status <> 'void') "
                      "ELSE false END) ELSE __trellis_x.\"last\" END"));
  CHECK_THAT(sql,
             Catch::Contains("FROM (SELECT * FROM \"public\".\"orders\" AS \"o\" WHERE "
                             "((o.customer_id) IS NULL) AND EXISTS (SELECT 1 FROM __trellis_pre "
                             "AS __trellis_d WHERE __trellis_d.__trellis_flagged AND "
                             "(__trellis_d.\"customer_id\" IS NULL)) AND EXISTS"));
  CHECK_THAT(sql, Catch::Contains("LEFT JOIN __trellis_extremes AS __trellis_x ON "
                                  "ARRAY[__trellis_x.\"customer_id\"] = "
                                  "ARRAY[__trellis_d.\"customer_id\"]"));
  CHECK_THAT(sql, Catch::EndsWith("SELECT (SELECT count(*) FROM __trellis_updated) + (SELECT "
                                  "count(*) FROM __trellis_updated_null) + (SELECT count(*) FROM "
                                  "__trellis_inserted), (SELECT count(*) FROM __trellis_deleted) + "
                                  "(SELECT count(*) FROM __trellis_deleted_null)"));
}

TEST_CASE("an index answers a lone min or max of grouped columns only", "[group][sql]") {
  GroupShape shape = OrderTotals();
  CHECK(LoneExtremeIndexColumns(shape) == std::vector<std::string>{"customer_id", "placed_at"});
  // Without GROUP BY the one row is recomputed by one statement already.
  GroupShape whole = shape;
  whole.keys.clear();
  CHECK(LoneExtremeIndexColumns(whole).empty());
  CHECK_THAT(ApplyDeltasSql(whole, "deltas"), !Catch::Contains("pg_index"));
  // Two recomputed columns, or one over an expression: no one index serves.
  GroupShape two = shape;
  two.aggregates.push_back(Input(AggregateFunction::kMin, "o.amount", "least", 4));
  CHECK(LoneExtremeIndexColumns(two).empty());
  GroupShape expression = shape;
  expression.aggregates.back() = Input(AggregateFunction::kMax, "o.amount * 2", "last", 3);
  CHECK(LoneExtremeIndexColumns(expression).empty());
}

TEST_CASE("deltas without min or max read no source", "[group][sql]") {
  GroupShape shape = OrderTotals();
  shape.aggregates.pop_back();
  const std::string sql = ApplyDeltasSql(shape, "deltas");
  CHECK_THAT(sql, !Catch::Contains("__trellis_extremes") && !Catch::Contains("orders"));
  CHECK_THAT(sql, Catch::Contains("false AS __trellis_flagged"));
}

TEST_CASE("without GROUP BY the one row is updated and never deleted", "[group][sql]") {
  GroupShape whole = OrderTotals();
  whole.keys.clear();
  const std::string sql = ApplyDeltasSql(whole, "deltas");
  CHECK_THAT(sql, Catch::Contains("false AS __trellis_emptied"));
  CHECK_THAT(sql, Catch::Contains("LEFT JOIN \"public\".\"order_totals\" AS __trellis_t ON true"));
  CHECK_THAT(sql, !Catch::Contains("INSERT") && !Catch::Contains("DELETE"));
  // The max over the whole table, read only when a change reaches it.
  CHECK_THAT(sql,
             Catch::Contains("SELECT max((o.placed_at)) AS \"last\"\n  FROM (SELECT * FROM "
                             "\"public\".\"orders\" AS \"o\" WHERE EXISTS (SELECT 1 FROM "
                             "__trellis_pre AS __trellis_d WHERE __trellis_d.__trellis_flagged) "
                             "OFFSET 0) AS \"o\"\n  WHERE (o.status <> 'void')\n)"));
  CHECK_THAT(sql, Catch::EndsWith("SELECT (SELECT count(*) FROM __trellis_updated), 0::bigint"));
}

// ------------------------------------------------------ source index gaps

TEST_CASE("the fix for a source index gap indexes the grouped columns and expressions",
          "[group][gaps]") {
  CHECK(
      IndexFixSql("\"app\".\"orders\"", "o", {{"o.customer_id", "integer"}, {"region", "text"}}) ==
      "CREATE INDEX CONCURRENTLY ON \"app\".\"orders\" (\"customer_id\", \"region\")");
  CHECK(IndexFixSql("\"orders\"", "o",
                    {{"lower(o.region)", "text"}, {"o.\"Mixed\"", "text"}, {"x.o.y", "int"}}) ==
        "CREATE INDEX CONCURRENTLY ON \"orders\" ((lower(region)), \"Mixed\", (x.o.y))");
  // A qualifier inside a string is text, not a qualifier.
  CHECK(IndexFixSql("\"orders\"", "o", {{"o.a || 'o.b'", "text"}}) ==
        "CREATE INDEX CONCURRENTLY ON \"orders\" ((a || 'o.b'))");
}

TEST_CASE("the gap probe looks a group up by unknown values", "[group][gaps]") {
  CHECK(GroupLookupProbeSql("\"orders\"", "o",
                            {{"o.customer_id", "integer"}, {"lower(o.region)", "text"}}) ==
        "EXPLAIN (FORMAT JSON) SELECT 1 FROM \"orders\" AS \"o\" WHERE (o.customer_id) = (SELECT "
        "NULL::integer) AND (lower(o.region)) = (SELECT NULL::text)");
  CHECK(ProbeUsesIndex(R"j([{"Plan": {"Node Type": "Index Scan", "Index Cond": "(x = $0)"}}])j"));
  CHECK_FALSE(ProbeUsesIndex(R"j([{"Plan": {"Node Type": "Seq Scan", "Filter": "(x = $0)"}}])j"));
}

}  // namespace
}  // namespace trellis::plan::aggregates
