// The compiler of DISTINCT aggregates into stages
// (plan/distinct_aggregate_stages.h), without a database: the hidden
// grouping by (groups, distinct argument) and the user's statement over
// it, as text; and what the grammar reads and refuses of DISTINCT inside a
// call. That the stages are maintained exactly is tested through the port
// (elixir/test/trellis/compiled/distinct_differential_test.exs).
#include <catch2/catch.hpp>

#include "grammar/parser.h"
#include "grammar/render.h"
#include "plan/distinct_aggregate_stages.h"
#include "plan/grouped_rewrite.h"

namespace trellis::test {
namespace {

using Catch::Matchers::Contains;

grammar::TransformStmt Statement(const std::string& text) {
  auto parsed = grammar::Parse(text);
  REQUIRE(std::holds_alternative<grammar::Statement>(parsed));
  return std::get<grammar::TransformStmt>(std::get<grammar::Statement>(parsed));
}

grammar::ParseError Refusal(const std::string& text) {
  auto parsed = grammar::Parse(text);
  REQUIRE(std::holds_alternative<grammar::ParseError>(parsed));
  return std::get<grammar::ParseError>(parsed);
}

const grammar::QualifiedName kHidden{"trellis", "__trellis_distinct_7"};

plan::DistinctAggregateStages Compile(const std::string& text, plan::CallTypes types = {}) {
  auto stages = plan::CompileDistinctAggregateStages(Statement(text), kHidden, types);
  REQUIRE(stages.ok());
  return stages.value();
}

TEST_CASE("the grammar reads DISTINCT inside count, sum and avg", "[grammar][distinct]") {
  auto stmt = Statement(
      "TRANSFORM t FROM s SELECT g, count(DISTINCT x) AS n, sum( distinct x ) + 1 AS s, "
      "count(x) AS c GROUP BY g HAVING avg(DISTINCT x) > 2");
  REQUIRE(stmt.select[1].aggregate);
  CHECK(stmt.select[1].aggregate->distinct);
  CHECK(stmt.select[1].aggregate->argument == std::optional<std::string>("x"));
  REQUIRE(stmt.select[2].aggregate_uses.size() == 1);
  CHECK(stmt.select[2].aggregate_uses[0].call.distinct);
  CHECK_FALSE(stmt.select[3].aggregate->distinct);
  REQUIRE(stmt.having_uses.size() == 1);
  CHECK(stmt.having_uses[0].call.distinct);
  CHECK(stmt.HasDistinctAggregates());
  CHECK_FALSE(
      Statement("TRANSFORM t FROM s SELECT g, count(x) AS n GROUP BY g").HasDistinctAggregates());
  // The statement as written is what definitions/1 shows.
  CHECK_THAT(grammar::Render(stmt),
             Contains("count(DISTINCT x) AS n") && Contains("HAVING avg(DISTINCT x) > 2"));
  CHECK(plan::CallText(*stmt.select[1].aggregate) == "count(DISTINCT x)");
}

TEST_CASE("DISTINCT is refused where it cannot be compiled, each with the fix",
          "[grammar][distinct]") {
  struct Case {
    std::string text;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"TRANSFORM t FROM s SELECT max(DISTINCT x) AS m",
       "max(DISTINCT ...) is not supported: DISTINCT does not change max's result; remove "
       "DISTINCT"},
      {"TRANSFORM t FROM s SELECT g, bool_or(DISTINCT b) AS m GROUP BY g",
       "bool_or(DISTINCT ...) is not supported"},
      {"TRANSFORM t FROM s SELECT count(DISTINCT *) AS n", "count(DISTINCT *) is not SQL"},
      {"TRANSFORM t FROM s SELECT id WHERE x > (SELECT count(DISTINCT y) FROM u WHERE u.k = s.k)",
       "count(DISTINCT ...) is not supported in a subquery: define a transform"},
      {"ALTER TRANSFORM t ADD COLUMN count(DISTINCT x) AS n",
       "ALTER TRANSFORM cannot add or change a column with count(DISTINCT ...)"},
      {"ALTER TRANSFORM t ALTER COLUMN n AS sum(DISTINCT x)",
       "ALTER TRANSFORM cannot add or change a column with sum(DISTINCT ...)"},
  };
  for (const auto& c : cases) {
    INFO(c.text);
    const auto error = Refusal(c.text);
    CHECK_THAT(error.message, Contains(c.message));
  }
  CHECK(Refusal("TRANSFORM t FROM s SELECT max(DISTINCT x) AS m").kind ==
        grammar::ParseError::Kind::kUnsupported);
}

TEST_CASE("one grouping by groups and value holds the distinct values and the partials",
          "[plan][distinct]") {
  auto stages = Compile(
      "TRANSFORM r FROM orders o SELECT o.region, count(DISTINCT o.customer_id) AS customers, "
      "sum(o.amount) AS total, count(*) AS n, max(o.amount) AS top, "
      "avg(o.amount) AS mean WHERE o.amount > 0 GROUP BY o.region",
      {{"sum(o.amount)", "bigint"}, {"avg(o.amount)", "numeric"}});
  CHECK(grammar::Render(stages.values) ==
        "TRANSFORM trellis.__trellis_distinct_7 FROM orders AS o SELECT o.region AS region, "
        "o.customer_id AS trellis_dv, sum(o.amount) AS trellis_dp1, count(*) AS trellis_dp2, "
        "max(o.amount) AS trellis_dp3, sum((o.amount)::numeric) AS trellis_dp4, "
        "count(o.amount) AS trellis_dp5 WHERE o.amount > 0 GROUP BY o.region, o.customer_id");
  const std::string d = "\"trellis_dst\".";
  CHECK(grammar::Render(stages.owner) ==
        "TRANSFORM r FROM trellis.__trellis_distinct_7 AS trellis_dst SELECT " + d +
            "\"region\" AS region, count(" + d + "\"trellis_dv\") AS customers, (sum(" + d +
            "\"trellis_dp1\"))::bigint AS total, (coalesce(sum(" + d +
            "\"trellis_dp2\"), 0))::bigint AS n, max(" + d + "\"trellis_dp3\") AS top, (sum(" + d +
            "\"trellis_dp4\") / (nullif(sum(" + d +
            "\"trellis_dp5\"), 0))::numeric) AS mean GROUP BY " + d + "\"region\"");
  // The owner's calls were read by the grammar, so define can compile it.
  CHECK(stages.owner.select[1].aggregate);
  CHECK(stages.owner.select[2].aggregate_uses.size() == 1);
  CHECK_FALSE(stages.owner.HasDistinctAggregates());
  CHECK_FALSE(stages.values.HasDistinctAggregates());
  // The grouping's partials are aggregate items its group plan keeps.
  for (const auto& item : stages.values.select) {
    CHECK(item.aggregate.has_value() == (item.alias.rfind("trellis_dp", 0) == 0));
  }
}

TEST_CASE("sum, avg and HAVING over DISTINCT values; a whole table; types beyond numeric",
          "[plan][distinct]") {
  auto stages = Compile(
      "TRANSFORM t FROM s SELECT sum(DISTINCT s.x) AS sx, avg(DISTINCT s.x) * 2 AS ax, "
      "avg(s.f) AS af, avg(s.i) AS ai HAVING count(DISTINCT s.x) > 1",
      {{"avg(s.f)", "double precision"}, {"avg(s.i)", "interval"}});
  CHECK(stages.values.group_by == std::vector<std::string>{"s.x"});
  const std::string d = "\"trellis_dst\".";
  CHECK(stages.owner.select[0].expr == "sum(" + d + "\"trellis_dv\")");
  CHECK(stages.owner.select[1].expr == "avg(" + d + "\"trellis_dv\") * 2");
  CHECK(stages.owner.select[2].expr == "(sum(" + d + "\"trellis_dp1\") / (nullif(sum(" + d +
                                           "\"trellis_dp2\"), 0))::double precision)");
  CHECK(stages.owner.select[3].expr == "(sum(" + d + "\"trellis_dp3\") / (nullif(sum(" + d +
                                           "\"trellis_dp4\"), 0))::double precision)::interval");
  CHECK(stages.owner.group_by.empty());
  CHECK(stages.owner.having == std::optional<std::string>("count(" + d + "\"trellis_dv\") > 1"));
}

TEST_CASE("over a join, expressions read the group columns", "[plan][distinct]") {
  auto stages = Compile(
      "TRANSFORM seg FROM orders o JOIN customers c ON o.customer_id = c.id "
      "SELECT c.segment, c.segment || ':' || count(DISTINCT o.product) AS label "
      "GROUP BY c.segment");
  CHECK(stages.values.joins.size() == 1);
  CHECK(stages.owner.joins.empty());
  CHECK(stages.owner.select[1].expr ==
        "\"trellis_dst\".\"segment\" || ':' || count(\"trellis_dst\".\"trellis_dv\")");
}

TEST_CASE("the grouping's own column names are none of the user's", "[plan][distinct]") {
  auto stages = Compile(
      "TRANSFORM t FROM s SELECT s.trellis_dv AS trellis_dv, s.g AS trellis_d_x, "
      "count(DISTINCT s.x) AS n, count(*) AS m GROUP BY s.trellis_dv, s.g");
  CHECK(stages.values.select[2].alias == "trellis_d__v");
  CHECK(stages.values.select[3].alias == "trellis_d__p1");
  CHECK(stages.owner.select[2].expr == "count(\"trellis_dst\".\"trellis_d__v\")");
}

TEST_CASE("DISTINCT calls over two arguments are refused with the fix", "[plan][distinct]") {
  auto stages = plan::CompileDistinctAggregateStages(
      Statement("TRANSFORM t FROM s SELECT g, count(DISTINCT a) AS na, count(DISTINCT b) AS nb "
                "GROUP BY g"),
      kHidden, {});
  REQUIRE_FALSE(stages.ok());
  CHECK(stages.status().code() == Code::kUnsupported);
  CHECK_THAT(stages.status().message(), Contains("calls count(DISTINCT a) and count(DISTINCT b)") &&
                                            Contains("define a transform for each argument"));
  // The same argument written twice, spaced differently, is one.
  CHECK(plan::CompileDistinctAggregateStages(
            Statement("TRANSFORM t FROM s SELECT count(DISTINCT s.a) AS n, sum(DISTINCT s . a) "
                      "AS m"),
            kHidden, {})
            .ok());
}

}  // namespace
}  // namespace trellis::test
