// Aggregates kept by recompute of their group (grammar/recomputed_aggregate.h,
// plan/aggregates/recomputed_rule.h), without a database: what the grammar
// reads and refuses, the expressions a call evaluates per row, and the
// rule's SQL. That the targets stay equal to their query is tested through
// the port (elixir/test/trellis/compiled/recomputed_differential_test.exs).
#include <catch2/catch.hpp>

#include "grammar/parser.h"
#include "grammar/recomputed_aggregate.h"
#include "grammar/render.h"
#include "parsed_statement.h"
#include "plan/aggregate_stages.h"
#include "plan/aggregates/rules.h"
#include "plan/distinct_aggregate_stages.h"
#include "plan/grouped_rewrite.h"

namespace trellis::test {
namespace {

using Catch::Matchers::Contains;
using grammar::AggregateFunction;

TEST_CASE("the grammar reads an aggregate kept by recompute as written", "[grammar][recomputed]") {
  auto stmt = Parsed(
      "TRANSFORM t FROM s SELECT g, string_agg(DISTINCT s.name, ', ' ORDER BY s.name DESC) AS "
      "names, bit_or(s.flags) AS flags, pg_catalog.stddev_samp(s.qty) AS spread, "
      "coalesce(array_agg(s.id ORDER BY s.id), '{}') AS ids GROUP BY g");
  REQUIRE(stmt.select[1].aggregate);
  const grammar::AggregateCall& names = *stmt.select[1].aggregate;
  CHECK(names.function == AggregateFunction::kRecomputed);
  CHECK(names.name == "string_agg");
  CHECK(names.argument == std::optional<std::string>("DISTINCT s.name, ', ' ORDER BY s.name DESC"));
  CHECK_FALSE(names.distinct);
  CHECK(plan::CallText(names) == "string_agg(DISTINCT s.name, ', ' ORDER BY s.name DESC)");
  CHECK(grammar::RowExpressions(names) == std::vector<std::string>{"s.name", "', '", "s.name"});
  CHECK(stmt.select[2].aggregate->name == "bit_or");
  CHECK(stmt.select[3].aggregate->name == "stddev_samp");
  // Inside an expression: compiled like any expression over aggregates.
  CHECK_FALSE(stmt.select[4].aggregate);
  REQUIRE(stmt.select[4].aggregate_uses.size() == 1);
  CHECK(stmt.select[4].aggregate_uses[0].call.name == "array_agg");
  CHECK_FALSE(stmt.HasDistinctAggregates());
  CHECK_THAT(grammar::Render(stmt),
             Contains("string_agg(DISTINCT s.name, ', ' ORDER BY s.name DESC) AS names"));
}

TEST_CASE("a call's per-row expressions leave out its ordering words", "[grammar][recomputed]") {
  const grammar::AggregateCall call{AggregateFunction::kRecomputed,
                                    "f(a, b), (c) ORDER BY a + 1 ASC NULLS FIRST, lower(b) USING <",
                                    false, "jsonb_object_agg"};
  CHECK(grammar::RowExpressions(call) ==
        std::vector<std::string>{"f(a, b)", "(c)", "a + 1", "lower(b)"});
  CHECK(grammar::RowExpressions(grammar::AggregateCall{
            AggregateFunction::kSum, "a, b", false, {}}) == std::vector<std::string>{"a, b"});
  CHECK(grammar::RowExpressions(
            grammar::AggregateCall{AggregateFunction::kCount, std::nullopt, false, {}})
            .empty());
}

TEST_CASE("aggregates kept by recompute are refused where they cannot be, each with the fix",
          "[grammar][recomputed]") {
  struct Case {
    std::string text;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"TRANSFORM t FROM s SELECT g, string_agg(s.name, ',') AS names GROUP BY g",
       "string_agg(...) without ORDER BY inside the call is not supported"},
      {"TRANSFORM t FROM s SELECT g, array_agg(DISTINCT s.id) AS ids GROUP BY g",
       "array_agg(DISTINCT s.id ORDER BY <columns that tell the rows apart>)"},
      {"TRANSFORM t FROM s SELECT g, jsonb_agg(s.doc) AS docs GROUP BY g",
       "jsonb_agg(...) without ORDER BY"},
      {"TRANSFORM t FROM s SELECT id WHERE flags = (SELECT bit_or(u.f) FROM u WHERE u.k = s.k)",
       "bit_or is not supported in a subquery: define a transform that computes it"},
      {"ALTER TRANSFORM t ADD COLUMN stddev(x) AS sd",
       "ALTER TRANSFORM cannot add or change a column with stddev"},
      {"ALTER TRANSFORM t ALTER COLUMN sd AS variance(x)",
       "ALTER TRANSFORM cannot add or change a column with variance"},
      {"TRANSFORM t FROM s SELECT g, bit_and(s.f) FILTER (WHERE s.f > 0) AS m GROUP BY g",
       "FILTER on an aggregate is not supported"},
  };
  for (const auto& c : cases) {
    INFO(c.text);
    CHECK_THAT(Refused(c.text).message, Contains(c.message));
  }
  CHECK(Refused(cases[0].text).kind == grammar::ParseError::Kind::kUnsupported);
  CHECK_THAT(Refused("TRANSFORM t FROM s SELECT g, bit_or() AS m GROUP BY g").message,
             Contains("bit_or needs an argument"));
  // An ORDER BY inside a subquery of an argument is not the call's: the
  // subquery is refused for itself.
  CHECK_THAT(
      Refused("TRANSFORM t FROM s SELECT g, string_agg((SELECT 1 ORDER BY 1)::text, ',') AS m "
              "GROUP BY g")
          .message,
      Contains("a subquery in a SELECT item is not supported"));
}

TEST_CASE("beside a DISTINCT call, an aggregate kept by recompute is refused with the fix",
          "[plan][recomputed]") {
  auto stages = plan::CompileDistinctAggregateStages(
      Parsed("TRANSFORM t FROM s SELECT g, count(DISTINCT a) AS na, bit_or(f) AS fl GROUP BY g"),
      grammar::QualifiedName{"trellis", "__trellis_distinct_1"}, {});
  REQUIRE_FALSE(stages.ok());
  CHECK(stages.status().code() == Code::kUnsupported);
  CHECK_THAT(stages.status().message(),
             Contains("calls bit_or(f) beside count(DISTINCT a)") &&
                 Contains("define a transform for each, grouped alike, and join their targets"));
}

TEST_CASE("an expression over a recomputed call puts the call in the hidden grouping",
          "[plan][recomputed]") {
  auto stages = plan::CompileAggregateStages(
      Parsed("TRANSFORM t FROM s SELECT s.g, coalesce(string_agg(s.n, ',' ORDER BY s.n), '') AS "
             "names GROUP BY s.g HAVING stddev(s.q) > 1"),
      grammar::QualifiedName{"trellis", "__trellis_group_1"});
  REQUIRE(stages.ok());
  const auto& group = stages.value().group;
  REQUIRE(group.select.size() == 3);
  CHECK(group.select[1].expr == "string_agg(s.n, ',' ORDER BY s.n)");
  REQUIRE(group.select[1].aggregate);
  CHECK(group.select[1].aggregate->function == AggregateFunction::kRecomputed);
  CHECK(group.select[2].expr == "stddev(s.q)");
  // The grouping's text, read again as its stored definition is, is the same.
  auto again = Parsed(grammar::Render(group));
  CHECK(again.select[1].aggregate == group.select[1].aggregate);
}

TEST_CASE("the rule recomputes the call over the group's rows for every changed group",
          "[plan][recomputed]") {
  const grammar::AggregateCall call{AggregateFunction::kRecomputed, "s.n, ',' ORDER BY s.n", false,
                                    "string_agg"};
  plan::aggregates::AggregateInput input;
  input.call = call;
  input.column = "names";
  input.state_prefix = "__trellis_2_";
  input.argument = *call.argument;
  const auto rule = plan::aggregates::RuleFor(input);
  CHECK(rule.upkeep == plan::aggregates::Upkeep::kRecompute);
  REQUIRE(rule.columns.size() == 1);
  const auto& column = rule.columns.front();
  CHECK(column.name == "names");
  CHECK(column.Recompute() == "string_agg(s.n, ',' ORDER BY s.n)");
  CHECK(column.Delta().empty());
  CHECK(column.Update("(SELECT x)") == "(SELECT x)");
  CHECK(column.Insert("(SELECT x)") == "(SELECT x)");
  CHECK(column.RecomputeWhen() == "true");
  // In quarantine the recorded groups' rows are skipped, not evaluated.
  input.quarantined = "k = ANY(q)";
  CHECK(plan::aggregates::RuleFor(input).columns.front().Recompute() ==
        "string_agg(s.n, ',' ORDER BY s.n) FILTER (WHERE NOT coalesce(k = ANY(q), false))");
}

}  // namespace
}  // namespace trellis::test
