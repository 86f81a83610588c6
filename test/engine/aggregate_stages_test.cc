// The compiler of HAVING and expressions over aggregates into stages
// (plan/aggregate_stages.h), without a database: the hidden grouping and
// the user's projection over it that a statement becomes, as text. That
// they are maintained exactly is tested through the port
// (elixir/test/trellis/group_by/compiled_differential_test.exs).
#include <catch2/catch.hpp>

#include "grammar/parser.h"
#include "grammar/render.h"
#include "plan/aggregate_stages.h"

namespace trellis::test {
namespace {

using Catch::Matchers::Contains;

grammar::TransformStmt Statement(const std::string& text) {
  auto parsed = grammar::Parse(text);
  REQUIRE(std::holds_alternative<grammar::Statement>(parsed));
  return std::get<grammar::TransformStmt>(std::get<grammar::Statement>(parsed));
}

const grammar::QualifiedName kHidden{"trellis", "__trellis_group_7"};

plan::AggregateStages Compile(const std::string& text) {
  auto stages = plan::CompileAggregateStages(Statement(text), kHidden);
  REQUIRE(stages.ok());
  return stages.value();
}

TEST_CASE("each distinct aggregate call becomes one hidden column", "[plan][stages]") {
  auto stages = Compile(
      "TRANSFORM region_stats FROM orders o SELECT o.region, sum(o.amount) / nullif(count(*), 0) "
      "AS mean, 100 * sum(o.paid) AS paid_cents, coalesce(max(o.amount), 0) AS top "
      "WHERE o.amount > 0 GROUP BY o.region HAVING count(*) > 5 AND sum(o.amount) > 10");
  CHECK(grammar::Render(stages.group) ==
        "TRANSFORM trellis.__trellis_group_7 FROM orders AS o SELECT o.region AS region, "
        "sum(o.amount) AS __trellis_a1, count(*) AS __trellis_a2, sum(o.paid) AS __trellis_a3, "
        "max(o.amount) AS __trellis_a4 WHERE o.amount > 0 GROUP BY o.region");
  CHECK(grammar::Render(stages.owner) ==
        "TRANSFORM region_stats FROM trellis.__trellis_group_7 AS __trellis_grp SELECT "
        "\"__trellis_grp\".\"region\" AS region, "
        "\"__trellis_grp\".\"__trellis_a1\" / nullif(\"__trellis_grp\".\"__trellis_a2\", 0) AS "
        "mean, 100 * \"__trellis_grp\".\"__trellis_a3\" AS paid_cents, "
        "coalesce(\"__trellis_grp\".\"__trellis_a4\", 0) AS top WHERE "
        "\"__trellis_grp\".\"__trellis_a2\" > 5 AND \"__trellis_grp\".\"__trellis_a1\" > 10");
  // The hidden grouping is a plain GROUP BY the engine already keeps.
  CHECK_FALSE(stages.group.CompilesToStages());
  for (const auto& item : stages.group.select) {
    if (item.alias != "region") CHECK(item.aggregate);
  }
}

TEST_CASE("GROUP BY expressions outside aggregates read the hidden group column",
          "[plan][stages]") {
  // `region` and `o.region` are one column to PostgreSQL; a literal that
  // reads like one is left alone, and so is a longer name ending in it.
  auto stages = Compile(
      "TRANSFORM t FROM orders o SELECT o.region AS r, lower(o.day) AS day, "
      "region || ':o.region:' || sum(amount)::text AS label, lower( o.day ) || count(*) AS d2 "
      "GROUP BY o.region, lower(o.day)");
  REQUIRE(stages.owner.select.size() == 4);
  CHECK(stages.owner.select[2].expr ==
        "\"__trellis_grp\".\"r\" || ':o.region:' || \"__trellis_grp\".\"__trellis_a1\"::text");
  CHECK(stages.owner.select[3].expr ==
        "\"__trellis_grp\".\"day\" || \"__trellis_grp\".\"__trellis_a2\"");
}

TEST_CASE("over a join and over the whole table", "[plan][stages]") {
  auto join = Compile(
      "TRANSFORM seg FROM orders o JOIN customers c ON o.customer_id = c.id "
      "SELECT c.segment, sum(o.amount) AS total GROUP BY c.segment HAVING sum(o.amount) > 1000");
  CHECK(join.group.joins.size() == 1);
  CHECK(grammar::Render(join.group) ==
        "TRANSFORM trellis.__trellis_group_7 FROM orders AS o JOIN customers AS c ON "
        "o.customer_id = c.id SELECT c.segment AS segment, sum(o.amount) AS __trellis_a1 "
        "GROUP BY c.segment");
  CHECK(join.owner.joins.empty());
  CHECK(join.owner.where ==
        std::optional<std::string>("\"__trellis_grp\".\"__trellis_a1\" > 1000"));

  auto whole = Compile("TRANSFORM r FROM t SELECT sum(a) / nullif(sum(b), 0) AS r");
  CHECK(whole.group.group_by.empty());
  REQUIRE(whole.group.select.size() == 2);
  CHECK(whole.owner.select.front().expr ==
        "\"__trellis_grp\".\"__trellis_a1\" / nullif(\"__trellis_grp\".\"__trellis_a2\", 0)");
}

TEST_CASE("a column outside aggregates that is no GROUP BY item is refused", "[plan][stages]") {
  for (const char* text :
       {"TRANSFORM t FROM orders o SELECT o.region, sum(o.amount) + o.amount AS x "
        "GROUP BY o.region",
        // A bare name that is a group column's name but not its expression
        // would read that column: refused, not guessed.
        "TRANSFORM t FROM orders o SELECT o.city AS region, sum(o.amount) || region AS x "
        "GROUP BY o.city"}) {
    INFO(text);
    auto stages = plan::CompileAggregateStages(Statement(text), kHidden);
    REQUIRE_FALSE(stages.ok());
    CHECK(stages.status().code() == Code::kValidation);
    CHECK_THAT(stages.status().message(),
               Contains("outside an aggregate, and it is not one of the GROUP BY expressions"));
  }
}

TEST_CASE("hidden aggregate column names", "[plan][stages]") {
  CHECK(plan::AggregateColumnName(3) == "__trellis_a3");
  CHECK(plan::IsAggregateColumnName("__trellis_a12"));
  CHECK_FALSE(plan::IsAggregateColumnName("__trellis_a"));
  CHECK_FALSE(plan::IsAggregateColumnName("__trellis_all"));
  CHECK_FALSE(plan::IsAggregateColumnName("__trellis_1_sum"));
}

}  // namespace
}  // namespace trellis::test
