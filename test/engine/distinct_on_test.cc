// SELECT DISTINCT ON (grammar/distinct_on.h), without a database: what the
// grammar reads and refuses, the grouping a GROUP BY plan keeps for it, the
// tie-breaker rule, and the rule's SQL. That the targets stay equal to their
// query is tested through the port
// (elixir/test/trellis/compiled/distinct_on_differential_test.exs).
#include <catch2/catch.hpp>

#include "grammar/distinct_on.h"
#include "grammar/parser.h"
#include "grammar/recomputed_aggregate.h"
#include "grammar/render.h"
#include "parsed_statement.h"
#include "plan/aggregates/rules.h"

namespace trellis::test {
namespace {

using Catch::Matchers::Contains;
using grammar::AggregateFunction;

constexpr const char* kLatest =
    "TRANSFORM latest FROM events e SELECT DISTINCT ON (e.account, lower(e.kind)) e.account, "
    "lower(e.kind) AS kind, e.amount, e.at + 1 AS next_at WHERE e.amount IS NOT NULL "
    "ORDER BY lower( e.kind ), e.account, e.at DESC NULLS LAST, e.id WITHOUT SOURCE INDEX";

TEST_CASE("the grammar reads SELECT DISTINCT ON and its ORDER BY as written",
          "[grammar][distinct_on]") {
  auto stmt = Parsed(kLatest);
  CHECK(stmt.distinct_on == std::vector<std::string>{"e.account", "lower(e.kind)"});
  CHECK(stmt.order_by ==
        std::vector<std::string>{"lower( e.kind )", "e.account", "e.at DESC NULLS LAST", "e.id"});
  CHECK_FALSE(stmt.distinct);
  CHECK(stmt.HasDistinctOn());
  CHECK(stmt.Groups());
  CHECK_FALSE(stmt.CompilesToStages());
  CHECK(stmt.without_source_index);
  const std::string rendered = grammar::Render(stmt);
  CHECK(rendered ==
        "TRANSFORM latest FROM events AS e SELECT DISTINCT ON (e.account, lower(e.kind)) "
        "e.account AS account, lower(e.kind) AS kind, e.amount AS amount, e.at + 1 AS next_at "
        "WHERE e.amount IS NOT NULL ORDER BY lower( e.kind ), e.account, e.at DESC NULLS LAST, "
        "e.id WITHOUT SOURCE INDEX");
  CHECK(Parsed(rendered) == stmt);
  // A nested bracket and a comma inside it belong to one expression.
  auto nested = Parsed(
      "TRANSFORM t FROM s SELECT DISTINCT ON (coalesce(a, (b)), c[1]) coalesce(a, (b)) AS k, "
      "c[1] AS c1, d ORDER BY coalesce(a, (b)), c[1], d, id");
  CHECK(nested.distinct_on == std::vector<std::string>{"coalesce(a, (b))", "c[1]"});
  // A bare column named as itself (s.id AS id) is no other item's name.
  CHECK(
      Parsed("TRANSFORM t FROM s SELECT DISTINCT ON (a) a, s.id ORDER BY a, id").order_by.size() ==
      2);
}

TEST_CASE("ORDER BY keys leave out their direction, and name a column only when bare",
          "[grammar][distinct_on]") {
  CHECK(grammar::OrderKey("e.at DESC NULLS LAST") == "e.at");
  CHECK(grammar::OrderKey("lower(x) USING <") == "lower(x)");
  CHECK(grammar::OrderKey("f(a DESC)") == "f(a DESC)");
  CHECK(grammar::OrderKey("a") == "a");
  CHECK(grammar::SameTokens("lower( e.kind )", "lower(e.kind)"));
  CHECK_FALSE(grammar::SameTokens("kind", "e.kind"));
  CHECK(grammar::SameTokens("\"kind\"", "kind"));
  CHECK_FALSE(grammar::SameTokens("\"Kind\"", "kind"));
  CHECK(grammar::OrderKeyColumn("e.id", "e") == std::optional<std::string>("id"));
  CHECK(grammar::OrderKeyColumn("id", "e") == std::optional<std::string>("id"));
  CHECK(grammar::OrderKeyColumn("\"Id\"", "e") == std::optional<std::string>("Id"));
  CHECK_FALSE(grammar::OrderKeyColumn("x.id", "e"));
  CHECK_FALSE(grammar::OrderKeyColumn("id + 0", "e"));
}

TEST_CASE("SELECT DISTINCT ON is refused where it cannot be kept, each with the fix",
          "[grammar][distinct_on]") {
  struct Case {
    std::string text;
    std::string message;
    grammar::ParseError::Kind kind;
  };
  using Kind = grammar::ParseError::Kind;
  const std::vector<Case> cases = {
      {"TRANSFORM t FROM s SELECT DISTINCT ON (a) a, b",
       "SELECT DISTINCT ON without ORDER BY is not supported", Kind::kUnsupported},
      {"TRANSFORM t FROM s SELECT DISTINCT ON (a) a, b ORDER BY a",
       "this ORDER BY names only the DISTINCT ON expressions", Kind::kUnsupported},
      {"TRANSFORM t FROM s SELECT DISTINCT ON (a) a, b ORDER BY b, a, id",
       "SELECT DISTINCT ON expressions must match the initial ORDER BY expressions: write "
       "ORDER BY a, then",
       Kind::kSyntax},
      {"TRANSFORM t FROM s SELECT DISTINCT ON (a) b ORDER BY a, id",
       "the DISTINCT ON expression a is not a SELECT item", Kind::kUnsupported},
      {"TRANSFORM t FROM s JOIN u ON s.k = u.k SELECT DISTINCT ON (s.a) s.a, u.b "
       "ORDER BY s.a, s.id",
       "SELECT DISTINCT ON over a JOIN is not supported: define a transform for the join",
       Kind::kUnsupported},
      {"TRANSFORM t FROM s SELECT DISTINCT ON (a) a, b WHERE EXISTS (SELECT 1 FROM u WHERE "
       "u.k = s.k) ORDER BY a, id",
       "SELECT DISTINCT ON with a subquery in WHERE is not supported", Kind::kUnsupported},
      {"TRANSFORM t FROM s SELECT DISTINCT ON (a) a, count(*) AS n GROUP BY a ORDER BY a, n",
       "SELECT DISTINCT ON with GROUP BY or HAVING is not supported", Kind::kUnsupported},
      {"TRANSFORM t FROM s SELECT DISTINCT ON (a) a, max(b) AS m ORDER BY a, id",
       "aggregates in a SELECT DISTINCT ON are not supported", Kind::kUnsupported},
      {"TRANSFORM t FROM s SELECT DISTINCT ON (a) a, b ORDER BY a, 2",
       "ORDER BY 2 (a position in the SELECT list) is not supported", Kind::kUnsupported},
      {"TRANSFORM t FROM s SELECT DISTINCT ON (a) a, b ORDER BY a, id LIMIT 1",
       "LIMIT and OFFSET are not supported", Kind::kUnsupported},
      {"TRANSFORM t FROM s SELECT DISTINCT ON (a) a, b ORDER BY a, max(id)",
       "aggregate functions are not allowed in ORDER BY", Kind::kSyntax},
      {"TRANSFORM t FROM s SELECT DISTINCT ON (a a, b ORDER BY a, id",
       "the \"(\" of DISTINCT ON is never closed", Kind::kSyntax},
      {"TRANSFORM t FROM s SELECT DISTINCT ON a, b ORDER BY a, id",
       "expected \"(\" after SELECT DISTINCT ON", Kind::kSyntax},
      {"TRANSFORM t FROM s SELECT DISTINCT ON () a ORDER BY a, id",
       "expected an expression after DISTINCT ON (", Kind::kSyntax},
      {"TRANSFORM t FROM s SELECT DISTINCT ON (a) a, b + 1 AS id ORDER BY a, id",
       "ORDER BY id names the SELECT item b + 1 AS id, which PostgreSQL would sort by",
       Kind::kUnsupported},
      {"TRANSFORM t FROM s SELECT a WHERE b ORDER BY a", "ORDER BY is not supported",
       Kind::kUnsupported},
  };
  for (const auto& c : cases) {
    INFO(c.text);
    const auto error = Refused(c.text);
    CHECK_THAT(error.message, Contains(c.message));
    CHECK(error.kind == c.kind);
  }
  CHECK(Refused(cases[0].text).position == 26);
}

TEST_CASE(
    "a DISTINCT ON is kept as a grouping by its expressions, each other column the first "
    "row's by the ORDER BY",
    "[plan][distinct_on]") {
  const auto stmt = Parsed(kLatest);
  const auto grouping = grammar::DistinctOnAsGrouping(stmt);
  CHECK_FALSE(grouping.HasDistinctOn());
  CHECK(grouping.order_by.empty());
  CHECK(grouping.group_by == stmt.distinct_on);
  REQUIRE(grouping.select.size() == 4);
  CHECK(grouping.select[0].expr == "e.account");
  CHECK_FALSE(grouping.select[0].aggregate);
  CHECK(grouping.select[1].expr == "lower(e.kind)");
  CHECK_FALSE(grouping.select[1].aggregate);
  const auto& amount = grouping.select[2];
  REQUIRE(amount.aggregate);
  CHECK(amount.aggregate->function == AggregateFunction::kRecomputed);
  CHECK(amount.aggregate->name == grammar::kFirstByOrder);
  CHECK(amount.aggregate->argument ==
        std::optional<std::string>("(e.amount) ORDER BY e.at DESC NULLS LAST, e.id"));
  CHECK(amount.expr == "(pg_catalog.array_agg((e.amount) ORDER BY e.at DESC NULLS LAST, e.id))[1]");
  REQUIRE(amount.aggregate_uses.size() == 1);
  CHECK(amount.expr.substr(amount.aggregate_uses[0].begin,
                           amount.aggregate_uses[0].end - amount.aggregate_uses[0].begin) ==
        "pg_catalog.array_agg((e.amount) ORDER BY e.at DESC NULLS LAST, e.id)");
  CHECK(grouping.select[3].expr ==
        "(pg_catalog.array_agg((e.at + 1) ORDER BY e.at DESC NULLS LAST, e.id))[1]");
  // Each column's per-row expressions: its value and the ORDER BY keys,
  // which define checks (no volatile function) and routes.
  CHECK(grammar::RowExpressions(*amount.aggregate) ==
        std::vector<std::string>{"(e.amount)", "e.at", "e.id"});
}

TEST_CASE("the ORDER BY of a DISTINCT ON must end in the source's primary key",
          "[plan][distinct_on]") {
  const auto stmt = Parsed(kLatest);
  CHECK_FALSE(grammar::DistinctOnTieRefusal(stmt, {"id"}));
  CHECK_FALSE(grammar::DistinctOnTieRefusal(
      Parsed("TRANSFORM t FROM s SELECT DISTINCT ON (a) a, b ORDER BY a, b, k2 DESC, s.k1"),
      {"k1", "k2"}));
  auto missing = grammar::DistinctOnTieRefusal(
      Parsed("TRANSFORM t FROM s SELECT DISTINCT ON (a) a, b ORDER BY a, b DESC, k1"),
      {"k1", "k2"});
  REQUIRE(missing);
  CHECK_THAT(*missing, Contains("end the ORDER BY with the primary key of s (ORDER BY a, b "
                                "DESC, k1, s.k2)"));
  // A key column inside an expression, or in the DISTINCT ON part, does not pick a row.
  CHECK(grammar::DistinctOnTieRefusal(
      Parsed("TRANSFORM t FROM s SELECT DISTINCT ON (id) id, b ORDER BY id, b"), {"id"}));
  CHECK(grammar::DistinctOnTieRefusal(
      Parsed("TRANSFORM t FROM s SELECT DISTINCT ON (a) a, b ORDER BY a, id + 0"), {"id"}));
  auto keyless = grammar::DistinctOnTieRefusal(
      Parsed("TRANSFORM t FROM s SELECT DISTINCT ON (a) a, b ORDER BY a, b"), {});
  REQUIRE(keyless);
  CHECK_THAT(*keyless, Contains("which has no primary key, is not supported"));
}

TEST_CASE("a DISTINCT ON column's rule recomputes the first row's value for every changed group",
          "[plan][distinct_on]") {
  const auto grouping = grammar::DistinctOnAsGrouping(Parsed(kLatest));
  plan::aggregates::AggregateInput input;
  input.call = *grouping.select[2].aggregate;
  input.column = "amount";
  input.state_prefix = "__trellis_1_";
  input.argument = *input.call.argument;
  const auto rule = plan::aggregates::RuleFor(input);
  CHECK(rule.upkeep == plan::aggregates::Upkeep::kRecompute);
  REQUIRE(rule.columns.size() == 1);
  const auto& column = rule.columns.front();
  CHECK(column.Recompute() ==
        "(pg_catalog.array_agg((e.amount) ORDER BY e.at DESC NULLS LAST, e.id))[1]");
  CHECK(column.Delta().empty());
  CHECK(column.RecomputeWhen() == "true");
  CHECK(column.Update("(SELECT x)") == "(SELECT x)");
  input.quarantined = "k = ANY(q)";
  CHECK(plan::aggregates::RuleFor(input).columns.front().Recompute() ==
        "(pg_catalog.array_agg((e.amount) ORDER BY e.at DESC NULLS LAST, e.id) FILTER (WHERE NOT "
        "coalesce(k = ANY(q), false)))[1]");
}

}  // namespace
}  // namespace trellis::test
