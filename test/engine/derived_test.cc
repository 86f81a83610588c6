// Queries in FROM and WITH queries (plan/derived_stages.h), without a
// database: what the grammar reads and refuses, the rendering, and the
// statements each query and the statement over them compile into. That
// the target stays equal to its query is tested through the port
// (elixir/test/trellis/compiled/derived_*_test.exs).
#include <catch2/catch.hpp>

#include "grammar/derived.h"
#include "grammar/parser.h"
#include "grammar/render.h"
#include "parsed_statement.h"
#include "plan/derived_stages.h"

namespace trellis::test {
namespace {

using Catch::Matchers::Contains;

constexpr const char* kSpenders =
    "TRANSFORM app.spenders WITH totals AS (FROM orders o SELECT o.customer_id, sum(o.amount) "
    "AS total WHERE o.paid GROUP BY o.customer_id), big AS (from totals SELECT customer_id "
    "WHERE total > 100) FROM (FROM customers c SELECT c.id, c.name WHERE c.active) a JOIN "
    "totals t ON t.customer_id = a.id LEFT JOIN big ON a.id = big.customer_id SELECT a.name, "
    "t.total, big.customer_id IS NOT NULL AS big WHERE EXISTS (SELECT 1 FROM totals x WHERE "
    "x.customer_id = a.id) GRANT SELECT TO reporting";

TEST_CASE("the grammar reads WITH queries and a query in FROM, and renders them back",
          "[grammar][derived]") {
  auto stmt = Parsed(kSpenders);
  REQUIRE(stmt.HasDerived());
  REQUIRE(stmt.with.size() == 2);
  REQUIRE(stmt.derived.size() == 1);
  CHECK(stmt.with[0].target.name == "totals");
  CHECK(stmt.with[0].group_by == std::vector<std::string>{"o.customer_id"});
  CHECK(stmt.with[0].where == "o.paid");
  CHECK(stmt.with[1].source.table.name == "totals");
  CHECK(stmt.derived[0].target.name == "a");
  CHECK(stmt.derived[0].select.size() == 2);
  CHECK(stmt.source.Qualifier() == "a");
  REQUIRE(stmt.joins.size() == 2);
  CHECK(stmt.joins[0].to == "a");
  CHECK(stmt.readers == std::vector<std::string>{"reporting"});
  // totals: read by big, by the JOIN and by the subquery; big by the LEFT JOIN.
  CHECK(grammar::WithReadCounts(stmt) == std::vector<std::size_t>{3, 1});
  const std::string rendered = grammar::Render(stmt);
  CHECK(rendered ==
        "TRANSFORM app.spenders WITH totals AS (FROM orders AS o SELECT o.customer_id AS "
        "customer_id, sum(o.amount) AS total WHERE o.paid GROUP BY o.customer_id), big AS (FROM "
        "totals SELECT customer_id AS customer_id WHERE total > 100) FROM (FROM customers AS c "
        "SELECT c.id AS id, c.name AS name WHERE c.active) AS a JOIN totals AS t ON a.id = "
        "t.customer_id LEFT JOIN big ON a.id = big.customer_id SELECT a.name AS name, t.total AS "
        "total, big.customer_id IS NOT NULL AS big WHERE EXISTS (SELECT 1 FROM totals x WHERE "
        "x.customer_id = a.id) GRANT SELECT TO reporting");
  // Parsed again, it renders alike (a subquery's position moved, so the
  // statements differ there).
  CHECK(grammar::Render(Parsed(rendered)) == rendered);
  CHECK(Parsed(rendered).with == stmt.with);
  CHECK(Parsed(rendered).derived == stmt.derived);
  // A query's last SELECT item, WHERE or GROUP BY ends at its ")".
  auto simple = Parsed("TRANSFORM t FROM (FROM a SELECT x, y + 1 AS z) AS s SELECT s.x");
  CHECK(simple.derived[0].select[1].expr == "y + 1");
  CHECK(
      Parsed("TRANSFORM t FROM (FROM a SELECT x WHERE f(x) > (1)) s SELECT s.x").derived[0].where ==
      "f(x) > (1)");
  CHECK(Parsed("TRANSFORM t FROM (FROM a SELECT x, count(*) AS n GROUP BY x) AS s SELECT s.x")
            .derived[0]
            .group_by == std::vector<std::string>{"x"});
  // A statement without them reads as before.
  CHECK_FALSE(Parsed("TRANSFORM t FROM a SELECT x").HasDerived());
}

TEST_CASE("queries in FROM and WITH: refusals name the form and the fix", "[grammar][derived]") {
  struct Case {
    const char* text;
    std::size_t position;
    grammar::ParseError::Kind kind;
    const char* words;
  };
  using K = grammar::ParseError::Kind;
  const Case cases[] = {
      {"TRANSFORM t WITH RECURSIVE r AS (FROM a SELECT x) FROM r SELECT x", 17, K::kUnsupported,
       "WITH RECURSIVE is not supported"},
      {"TRANSFORM t WITH r AS (DELETE FROM a RETURNING x) FROM r SELECT x", 23, K::kUnsupported,
       "a data-modifying WITH query (INSERT, UPDATE, DELETE, MERGE) is not supported: a "
       "transform only reads"},
      {"TRANSFORM t WITH r AS (INSERT INTO a VALUES (1) RETURNING x) FROM r SELECT x", 23,
       K::kUnsupported, "a data-modifying WITH query"},
      {"TRANSFORM t FROM a JOIN LATERAL (FROM b SELECT y) l ON l.y = a.x SELECT x", 24,
       K::kUnsupported, "LATERAL is not supported"},
      {"TRANSFORM t FROM LATERAL (FROM b SELECT y) l SELECT l.y", 17, K::kUnsupported,
       "LATERAL is not supported: a lateral query reads a row of the tables before it"},
      {"TRANSFORM t FROM (FROM a SELECT x ORDER BY x) s SELECT s.x", 34, K::kUnsupported,
       "ORDER BY inside a query in FROM or WITH is not supported"},
      {"TRANSFORM t WITH r AS (FROM a SELECT x LIMIT 5) FROM r SELECT x", 39, K::kUnsupported,
       "LIMIT, OFFSET and FETCH inside a query in FROM or WITH are not supported"},
      {"TRANSFORM t FROM (FROM a SELECT x WHERE x > 0 OFFSET 5) s SELECT s.x", 46, K::kUnsupported,
       "LIMIT, OFFSET and FETCH inside"},
      {"TRANSFORM t FROM (FROM a SELECT x UNION ALL FROM b SELECT x) s SELECT s.x", 34,
       K::kUnsupported, "UNION, INTERSECT and EXCEPT inside a query in FROM or WITH"},
      {"TRANSFORM t FROM (SELECT x FROM a) s SELECT s.x", 18, K::kSyntax,
       "a query in parentheses is written FROM first, as a TRANSFORM is"},
      {"TRANSFORM t FROM (FROM a SELECT x) SELECT x", 17, K::kSyntax,
       "a query in FROM needs a name: write (FROM ... SELECT ...) AS <name>"},
      {"TRANSFORM t FROM (FROM a SELECT x) AS s (y) SELECT s.y", 40, K::kUnsupported,
       "a column list after a query's name is not supported"},
      {"TRANSFORM t WITH r (y) AS (FROM a SELECT x) FROM r SELECT y", 19, K::kUnsupported,
       "a column list after a WITH query's name is not supported"},
      {"TRANSFORM t WITH r AS MATERIALIZED (FROM a SELECT x) FROM r SELECT x", 22, K::kUnsupported,
       "MATERIALIZED and NOT MATERIALIZED are not supported"},
      {"TRANSFORM t WITH r AS (FROM a SELECT x), r AS (FROM b SELECT x) FROM r SELECT x", 41,
       K::kSyntax, "WITH query \"r\" is named twice (first at position 17)"},
      {"TRANSFORM t WITH r AS (FROM a SELECT x) FROM a SELECT x", 17, K::kUnsupported,
       "WITH query r is never read: it would be kept as a stage for nothing"},
      {"TRANSFORM t FROM (FROM (FROM a SELECT x) i SELECT i.x) s SELECT s.x", 23, K::kUnsupported,
       "a query in FROM inside a query in parentheses is not supported"},
      {"TRANSFORM t FROM a SELECT x UNION ALL FROM (FROM b SELECT x) s SELECT s.x", 43,
       K::kUnsupported, "a query in the FROM of a UNION ALL branch is not supported"},
      {"TRANSFORM t FROM (FROM a SELECT x s SELECT s.x", 46, K::kSyntax,
       "expected AS and a column alias"},
      {"TRANSFORM t FROM (FROM a SELECT x WHERE x > 1 SELECT s.x", 17, K::kSyntax,
       "unbalanced parentheses: the \"(\" of the query is never closed"},
      {"TRANSFORM t FROM (FROM a SELECT x GRANT SELECT TO r) s SELECT s.x", 34, K::kSyntax,
       "expected WHERE, GROUP BY, HAVING or \")\" to close the query, found \"GRANT\""},
      {"TRANSFORM t FROM a JOIN (FROM b SELECT y) l ON l.y = a.x SELECT x", 24, K::kUnsupported,
       "joining a query in parentheses is not supported: name it in WITH"},
  };
  for (const auto& c : cases) {
    INFO(c.text);
    auto error = Refused(c.text);
    CHECK_THAT(error.message, Contains(c.words));
    CHECK(error.position == c.position);
    CHECK(error.kind == c.kind);
  }
}

TEST_CASE("queries in FROM and WITH compile into hidden transforms the statement reads",
          "[plan][derived]") {
  std::string text = kSpenders;
  text.insert(text.find(" GRANT"), " WITHOUT ROW SECURITY");
  auto stmt = Parsed(text);
  REQUIRE(plan::DerivedPartsNeeded(stmt) == 3);
  const std::vector<grammar::QualifiedName> hidden{{"trellis", "__trellis_derived_1"},
                                                   {"trellis", "__trellis_derived_2"},
                                                   {"trellis", "__trellis_derived_3"}};
  auto compiled = plan::CompileDerivedStages(stmt, hidden);
  REQUIRE(compiled.queries.size() == 3);
  CHECK(grammar::Render(compiled.queries[0]) ==
        "TRANSFORM trellis.__trellis_derived_1 FROM orders AS o SELECT o.customer_id AS "
        "customer_id, sum(o.amount) AS total WHERE o.paid GROUP BY o.customer_id WITHOUT ROW "
        "SECURITY");
  // A WITH query reads an earlier one's hidden target, under its name.
  CHECK(grammar::Render(compiled.queries[1]) ==
        "TRANSFORM trellis.__trellis_derived_2 FROM trellis.__trellis_derived_1 AS totals SELECT "
        "customer_id AS customer_id WHERE total > 100 WITHOUT ROW SECURITY");
  CHECK(grammar::Render(compiled.queries[2]) ==
        "TRANSFORM trellis.__trellis_derived_3 FROM customers AS c SELECT c.id AS id, c.name AS "
        "name WHERE c.active WITHOUT ROW SECURITY");
  CHECK(compiled.words == std::vector<std::string>{"the WITH query totals", "the WITH query big",
                                                   "the query in FROM (AS a)"});
  // The statement reads the hidden targets as written: a WITH query read
  // twice is one hidden target read twice (the JOIN and the subquery).
  const grammar::TransformStmt& owner = compiled.owner;
  CHECK_FALSE(owner.HasDerived());
  CHECK(owner.source == grammar::TableRef{hidden[2], "a"});
  CHECK(owner.joins[0].table == grammar::TableRef{hidden[0], "t"});
  CHECK(owner.joins[1].table == grammar::TableRef{hidden[1], "big"});
  REQUIRE(owner.subqueries.size() == 1);
  CHECK(owner.subqueries[0].from == grammar::TableRef{hidden[0], "x"});
  CHECK(owner.readers == std::vector<std::string>{"reporting"});
  CHECK(compiled.queries[0].readers.empty());
  CHECK_THAT(grammar::Render(owner),
             Contains("TRANSFORM app.spenders FROM trellis.__trellis_derived_3 AS a JOIN "
                      "trellis.__trellis_derived_1 AS t ON a.id = t.customer_id LEFT JOIN "
                      "trellis.__trellis_derived_2 AS big"));

  // Not recursive: a WITH query naming itself, or a later one, reads a table.
  auto own = Parsed(
      "TRANSFORM t WITH a AS (FROM a SELECT x), b AS (FROM a SELECT x) FROM b JOIN c ON c.x = "
      "b.x SELECT b.x");
  auto two = plan::CompileDerivedStages(own, {hidden[0], hidden[1]});
  CHECK(two.queries[0].source == grammar::TableRef{{std::nullopt, "a"}, std::nullopt});
  CHECK(two.queries[1].source == grammar::TableRef{hidden[0], "a"});
  CHECK(two.owner.source == grammar::TableRef{hidden[1], "b"});
  // A schema-qualified name is a table, whatever WITH queries are called.
  auto qualified = Parsed(
      "TRANSFORM t WITH a AS (FROM x SELECT y) FROM a JOIN app.a q ON q.y = "
      "a.y SELECT a.y");
  auto q = plan::CompileDerivedStages(qualified, {hidden[0]});
  CHECK(q.owner.joins[0].table.table == grammar::QualifiedName{"app", "a"});
  // UNION ALL branches read WITH queries too.
  auto branches = Parsed(
      "TRANSFORM t WITH a AS (FROM x SELECT y) FROM a SELECT y UNION ALL FROM a AS b SELECT "
      "b.y");
  auto u = plan::CompileDerivedStages(branches, {hidden[0]});
  CHECK(u.owner.HasUnionAll());
  CHECK(u.owner.union_all[0].source == grammar::TableRef{hidden[0], "b"});
}

}  // namespace
}  // namespace trellis::test
