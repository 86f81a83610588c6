// UNION ALL (plan/union_all_stages.h), without a database: what the grammar
// reads and refuses, the rendering, and the statements each branch and
// stack compiles into. That the target stays equal to its query is tested
// through the port (elixir/test/trellis/compiled/union_all_*_test.exs).
#include <catch2/catch.hpp>

#include "grammar/parser.h"
#include "grammar/render.h"
#include "parsed_statement.h"
#include "plan/union_all_stages.h"

namespace trellis::test {
namespace {

using Catch::Matchers::Contains;

constexpr const char* kContacts =
    "TRANSFORM app.contacts FROM customers c SELECT c.name, c.score * 2 AS score WHERE c.active "
    "UNION ALL FROM suppliers s JOIN regions r ON r.id = s.region_id SELECT s.name, r.rank AS "
    "score union all from customers SELECT name, score WHERE score > 4 WITHOUT SOURCE INDEX "
    "GRANT SELECT TO reporting";

TEST_CASE("the grammar reads UNION ALL branches, and renders them back", "[grammar][union_all]") {
  auto stmt = Parsed(kContacts);
  REQUIRE(stmt.HasUnionAll());
  REQUIRE(stmt.union_all.size() == 2);
  CHECK(stmt.source.table.name == "customers");
  CHECK(stmt.where == "c.active");
  const auto& second = stmt.union_all[0];
  CHECK(second.source.table.name == "suppliers");
  REQUIRE(second.joins.size() == 1);
  CHECK(second.joins[0].to == "s");
  CHECK(second.select.size() == 2);
  CHECK(second.select[1].alias == "score");
  CHECK_FALSE(second.where);
  CHECK(stmt.union_all[1].where == "score > 4");
  // The trailing clauses are the statement's, not the last branch's.
  CHECK(stmt.without_source_index);
  CHECK(stmt.readers == std::vector<std::string>{"reporting"});
  CHECK_FALSE(stmt.union_all[1].without_source_index);
  CHECK_FALSE(stmt.Groups());
  const std::string rendered = grammar::Render(stmt);
  CHECK(rendered ==
        "TRANSFORM app.contacts FROM customers AS c SELECT c.name AS name, c.score * 2 AS score "
        "WHERE c.active UNION ALL FROM suppliers AS s JOIN regions AS r ON s.region_id = r.id "
        "SELECT s.name AS name, r.rank AS score UNION ALL FROM customers SELECT name AS name, "
        "score AS score WHERE score > 4 WITHOUT SOURCE INDEX GRANT SELECT TO reporting");
  CHECK(Parsed(rendered) == stmt);
  // A branch with a WHERE ends at the next UNION ALL.
  CHECK(Parsed("TRANSFORM t FROM a SELECT x WHERE x > 1 UNION ALL FROM b SELECT x").where ==
        "x > 1");
}

TEST_CASE("UNION ALL refusals name the form and the fix", "[grammar][union_all]") {
  struct Case {
    const char* text;
    std::size_t position;
    grammar::ParseError::Kind kind;
    const char* words;
  };
  using K = grammar::ParseError::Kind;
  const Case cases[] = {
      {"TRANSFORM t FROM a SELECT x UNION FROM b SELECT x", 28, K::kUnsupported,
       "UNION (without ALL, which removes duplicate rows) is not supported: write UNION ALL"},
      {"TRANSFORM t FROM a SELECT x UNION DISTINCT FROM b SELECT x", 28, K::kUnsupported,
       "UNION (without ALL"},
      {"TRANSFORM t FROM a SELECT x INTERSECT FROM b SELECT x", 28, K::kUnsupported,
       "INTERSECT and EXCEPT are not supported"},
      {"TRANSFORM t FROM a SELECT x UNION ALL FROM b SELECT x EXCEPT FROM c SELECT x", 54,
       K::kUnsupported, "INTERSECT and EXCEPT are not supported"},
      {"TRANSFORM t FROM a SELECT x, count(*) AS n GROUP BY x UNION ALL FROM b SELECT x, y AS n",
       54, K::kUnsupported,
       "a grouping (GROUP BY, HAVING, DISTINCT or aggregates) in UNION ALL is not supported: "
       "each branch is kept row by row; define the grouping as a transform, then UNION ALL "
       "FROM its target"},
      {"TRANSFORM t FROM a SELECT x UNION ALL FROM b SELECT x GROUP BY x", 54, K::kUnsupported,
       "a grouping (GROUP BY, HAVING, DISTINCT or aggregates) in UNION ALL"},
      {"TRANSFORM t FROM a SELECT count(*) AS x UNION ALL FROM b SELECT x", 40, K::kUnsupported,
       "a grouping"},
      {"TRANSFORM t FROM a SELECT x UNION ALL FROM b SELECT DISTINCT x", 28, K::kUnsupported,
       "a grouping"},
      {"TRANSFORM t FROM a SELECT x UNION ALL FROM b SELECT x WHERE EXISTS (SELECT 1 FROM c "
       "WHERE c.k = b.k)",
       67, K::kUnsupported,
       "a subquery in the WHERE of a UNION ALL branch is not supported: define that branch as "
       "a transform (with its subquery), then UNION ALL FROM its target"},
      {"TRANSFORM t FROM a SELECT x, y UNION ALL FROM b SELECT x", 31, K::kUnsupported,
       "the UNION ALL branch at position 31 selects 1 columns and the first branch 2"},
      {"TRANSFORM t FROM a SELECT x, y UNION ALL FROM b SELECT x, z + 1 AS w", 58, K::kUnsupported,
       "column 2 of the UNION ALL branch at position 31 is named \"w\" where the first branch "
       "names it \"y\": a target column has one name; write z + 1 AS \"y\""},
      {"TRANSFORM t FROM a SELECT x UNION ALL FROM b SELECT x ORDER BY x", 54, K::kUnsupported,
       "ORDER BY is not supported"},
      {"TRANSFORM t FROM a SELECT x UNION ALL FROM b SELECT x LIMIT 3", 54, K::kUnsupported,
       "LIMIT and OFFSET are not supported"},
      {"TRANSFORM t FROM a SELECT x UNION ALL SELECT x FROM b", 38, K::kSyntax,
       "expected FROM after UNION ALL, found \"SELECT\""},
      {"TRANSFORM t FROM a SELECT x UNION ALL FROM b SELECT x GRANT SELECT TO r WHERE x", 72,
       K::kSyntax, "expected \",\" or end of statement after the role name"},
  };
  for (const auto& c : cases) {
    INFO(c.text);
    auto error = Refused(c.text);
    CHECK_THAT(error.message, Contains(c.words));
    CHECK(error.position == c.position);
    CHECK(error.kind == c.kind);
  }
  // The first branch's DISTINCT ON and its ORDER BY: a grouping too.
  CHECK_THAT(Refused("TRANSFORM t FROM a SELECT DISTINCT ON (x) x ORDER BY x, id UNION ALL "
                     "FROM b SELECT x")
                 .message,
             Contains("a grouping"));
}

TEST_CASE("a UNION ALL compiles into a projection or join per branch and FULL JOIN stacks",
          "[plan][union_all]") {
  auto stmt = Parsed(kContacts);
  REQUIRE(plan::UnionPartsNeeded(stmt) == 4);  // three branches, one inner stack
  const std::vector<grammar::QualifiedName> hidden{{"trellis", "__trellis_union_1"},
                                                   {"trellis", "__trellis_union_2"},
                                                   {"trellis", "__trellis_union_3"},
                                                   {"trellis", "__trellis_union_4"}};
  const std::vector<std::vector<std::string>> keys{
      {"\"c\".\"id\""}, {"\"s\".\"id\"", "\"r\".\"id\""}, {"\"customers\".\"id\""}};
  auto compiled = plan::CompileUnionAllStages(stmt, hidden, keys);
  REQUIRE(compiled.ok());
  REQUIRE(compiled->branches.size() == 3);
  REQUIRE(compiled->stacks.size() == 1);
  CHECK(grammar::Render(compiled->branches[0]) ==
        "TRANSFORM trellis.__trellis_union_1 FROM customers AS c SELECT c.name AS name, "
        "c.score * 2 AS score, '1:' || (ROW(\"c\".\"id\"))::text AS trellis_u WHERE c.active "
        "WITHOUT SOURCE INDEX");
  CHECK(grammar::Render(compiled->branches[1]) ==
        "TRANSFORM trellis.__trellis_union_2 FROM suppliers AS s JOIN regions AS r ON "
        "s.region_id = r.id SELECT s.name AS name, r.rank AS score, '2:' || "
        "(ROW(\"s\".\"id\", \"r\".\"id\"))::text AS trellis_u WITHOUT SOURCE INDEX");
  CHECK(grammar::Render(compiled->stacks[0]) ==
        "TRANSFORM trellis.__trellis_union_4 FROM trellis.__trellis_union_1 AS trellis_l "
        "FULL JOIN trellis.__trellis_union_2 AS trellis_r ON trellis_l.trellis_u = "
        "trellis_r.trellis_u SELECT CASE WHEN trellis_l.\"trellis_u\" IS NOT NULL THEN "
        "trellis_l.\"name\" ELSE trellis_r.\"name\" END AS name, CASE WHEN "
        "trellis_l.\"trellis_u\" IS NOT NULL THEN trellis_l.\"score\" ELSE trellis_r.\"score\" "
        "END AS score, coalesce(trellis_l.\"trellis_u\", trellis_r.\"trellis_u\") AS trellis_u "
        "WITHOUT SOURCE INDEX");
  // The last stack is the user's target, with the readers, without the row column.
  const std::string owner = grammar::Render(compiled->owner);
  CHECK_THAT(owner, Contains("TRANSFORM app.contacts FROM trellis.__trellis_union_4 AS "
                             "trellis_l FULL JOIN trellis.__trellis_union_3 AS trellis_r"));
  CHECK_THAT(owner, !Contains("AS trellis_u "));
  CHECK_THAT(owner, Contains("GRANT SELECT TO reporting"));
  CHECK(compiled->branches[0].readers.empty());
  CHECK_FALSE(compiled->owner.HasUnionAll());

  // A SELECT item named like the row column pushes it aside.
  auto clash = Parsed(
      "TRANSFORM t FROM a SELECT x AS trellis_u UNION ALL FROM b SELECT y AS "
      "trellis_u");
  CHECK(plan::UnionRowColumn(clash) == "trellis_u_");
  CHECK(plan::UnionPartsNeeded(clash) == 2);
  auto two = plan::CompileUnionAllStages(clash, {hidden[0], hidden[1]}, {{"a.id"}, {"b.id"}});
  REQUIRE(two.ok());
  CHECK(two->stacks.empty());
  CHECK(two->owner.target.name == "t");
  CHECK_THAT(grammar::Render(two->owner),
             Contains("ON trellis_l.trellis_u_ = trellis_r.trellis_u_"));
  // A branch without a key cannot be compiled.
  CHECK_FALSE(plan::CompileUnionAllStages(clash, {hidden[0], hidden[1]}, {{"a.id"}, {}}).ok());
}

}  // namespace
}  // namespace trellis::test
