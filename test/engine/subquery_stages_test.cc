// Subqueries in WHERE, without a database: what the grammar reads of each
// (grammar/subquery.h), what it refuses and with which message, and the
// stages a statement is compiled into (plan/subquery_stages.h), as text.
// That they are maintained exactly is tested through the port
// (elixir/test/trellis/compiled/subquery_differential_test.exs).
#include <catch2/catch.hpp>

#include "grammar/parser.h"
#include "grammar/render.h"
#include "parsed_statement.h"
#include "plan/aggregate_stages_define.h"
#include "plan/subquery_stages.h"

namespace trellis::test {
namespace {

using Catch::Matchers::Contains;

grammar::TransformStmt Statement(const std::string& text) { return Parsed(text); }

// Every refusal here is of SQL the grammar does not support yet.
grammar::ParseError Unsupported(const std::string& text) {
  auto error = test::Refused(text);
  CHECK(error.kind == grammar::ParseError::Kind::kUnsupported);
  return error;
}

plan::SubqueryStages Compile(const std::string& text) {
  const grammar::TransformStmt stmt = Statement(text);
  std::vector<grammar::QualifiedName> hidden;
  for (std::size_t k = 0; k < plan::HiddenPartsNeeded(stmt); ++k) {
    hidden.push_back(grammar::QualifiedName{"trellis", "__trellis_sub_" + std::to_string(7 + k)});
  }
  auto stages = plan::CompileSubqueryStages(stmt, hidden, {"id", "customer_id", "total"});
  REQUIRE(stages.ok());
  return stages.value();
}

TEST_CASE("EXISTS becomes a keyed count joined INNER", "[plan][subquery]") {
  const std::string text =
      "TRANSFORM open_orders FROM orders o SELECT o.id, o.total WHERE o.total > 0 AND EXISTS "
      "(SELECT 1 FROM lineitem l WHERE l.order_id = o.id AND l.shipped IS NULL)";
  const grammar::TransformStmt stmt = Statement(text);
  REQUIRE(stmt.subqueries.size() == 1);
  const auto& sq = stmt.subqueries[0];
  CHECK(sq.use == grammar::SubqueryUse::kExists);
  CHECK(sq.outer == "o");
  REQUIRE(sq.correlations.size() == 1);
  CHECK(sq.correlations[0] == grammar::Correlation{"id", "l.order_id"});
  CHECK(sq.where == std::optional<std::string>("(l.shipped IS NULL)"));
  // The statement as written renders back unchanged.
  CHECK(grammar::Render(stmt) ==
        "TRANSFORM open_orders FROM orders AS o SELECT o.id AS id, o.total AS total WHERE "
        "o.total > 0 AND EXISTS (SELECT 1 FROM lineitem l WHERE l.order_id = o.id AND l.shipped "
        "IS NULL)");

  auto stages = Compile(text);
  REQUIRE(stages.stages.size() == 1);
  CHECK(grammar::Render(stages.stages[0]) ==
        "TRANSFORM trellis.__trellis_sub_7 FROM lineitem AS l SELECT l.order_id AS k1, "
        "count(*) AS n WHERE (l.shipped IS NULL) AND (l.order_id) IS NOT NULL GROUP BY "
        "l.order_id");
  CHECK(grammar::Render(stages.owner) ==
        "TRANSFORM open_orders FROM orders AS o JOIN trellis.__trellis_sub_7 AS __trellis_s1 ON "
        "o.id = __trellis_s1.k1 SELECT o.id AS id, o.total AS total WHERE o.total > 0 "
        "AND true");
  CHECK_FALSE(stages.owner.HasSubqueries());
}

TEST_CASE("NOT EXISTS is an anti-join; IN keys the value selected", "[plan][subquery]") {
  auto not_exists = Compile(
      "TRANSFORM idle FROM customers c SELECT c.id WHERE NOT EXISTS (SELECT 1 FROM orders WHERE "
      "customer_id = c.id)");
  CHECK(grammar::Render(not_exists.owner) ==
        "TRANSFORM idle FROM customers AS c LEFT JOIN trellis.__trellis_sub_7 AS __trellis_s1 ON "
        "c.id = __trellis_s1.k1 SELECT c.id AS id WHERE "
        "(coalesce(\"__trellis_s1\".\"n\", 0) = 0)");
  CHECK(grammar::Render(not_exists.stages[0]) ==
        "TRANSFORM trellis.__trellis_sub_7 FROM orders SELECT customer_id AS k1, "
        "count(*) AS n WHERE (customer_id) IS NOT NULL GROUP BY customer_id");

  auto in = Compile(
      "TRANSFORM vip_orders FROM orders o SELECT o.id WHERE o.customer_id IN (SELECT v.id FROM "
      "vip v WHERE v.since > 2020)");
  CHECK(grammar::Render(in.stages[0]) ==
        "TRANSFORM trellis.__trellis_sub_7 FROM vip AS v SELECT v.id AS k1, count(*) AS "
        "n WHERE (v.since > 2020) AND (v.id) IS NOT NULL GROUP BY v.id");
  CHECK(grammar::Render(in.owner) ==
        "TRANSFORM vip_orders FROM orders AS o JOIN trellis.__trellis_sub_7 AS __trellis_s1 ON "
        "o.customer_id = __trellis_s1.k1 SELECT o.id AS id WHERE true");

  // With one table, the tested column may be written bare.
  auto bare =
      Statement("TRANSFORM t FROM orders SELECT id WHERE customer_id IN (SELECT id FROM vip)");
  REQUIRE(bare.subqueries.size() == 1);
  CHECK(bare.subqueries[0].tested == grammar::Correlation{"customer_id", "id"});
  CHECK(bare.subqueries[0].outer == "orders");
}

TEST_CASE("a correlated scalar comparison reads each aggregate from its column",
          "[plan][subquery]") {
  auto stages = Compile(
      "TRANSFORM small_lines FROM lineitem l JOIN part p ON l.partkey = p.partkey SELECT l.id "
      "WHERE (SELECT 0.2 * avg(qty) FROM lineitem WHERE partkey = p.partkey) > l.qty "
      "AND l.qty <= (SELECT count(*) + max(qty) FROM lineitem x WHERE x.partkey = l.partkey)");
  REQUIRE(stages.stages.size() == 2);
  CHECK(grammar::Render(stages.stages[0]) ==
        "TRANSFORM trellis.__trellis_sub_7 FROM lineitem SELECT partkey AS k1, avg(qty) "
        "AS a1 WHERE (partkey) IS NOT NULL GROUP BY partkey");
  CHECK(grammar::Render(stages.stages[1]) ==
        "TRANSFORM trellis.__trellis_sub_8 FROM lineitem AS x SELECT x.partkey AS k1, "
        "count(*) AS a1, max(qty) AS a2 WHERE (x.partkey) IS NOT NULL GROUP BY "
        "x.partkey");
  // The subquery written first is turned round; count reads 0 for no rows.
  CHECK_THAT(grammar::Render(stages.owner),
             Contains("((l.qty) < (0.2 * \"__trellis_s1\".\"a1\"))") &&
                 Contains("((l.qty) <= (coalesce(\"__trellis_s2\".\"a1\", 0) + "
                          "\"__trellis_s2\".\"a2\"))"));
}

TEST_CASE("NOT IN joins its matches and its totals, with SQL's NULL rule", "[plan][subquery]") {
  auto stages = Compile(
      "TRANSFORM ok_orders FROM orders o SELECT o.id WHERE o.customer_id NOT IN (SELECT b.cid FROM "
      "blocked b WHERE b.region = o.region)");
  REQUIRE(stages.stages.size() == 2);
  CHECK_FALSE(stages.from_copy);
  CHECK(grammar::Render(stages.stages[0]) ==
        "TRANSFORM trellis.__trellis_sub_7 FROM blocked AS b SELECT b.region AS k1, b.cid AS k2, "
        "count(*) AS n WHERE (b.region) IS NOT NULL AND (b.cid) IS NOT NULL GROUP BY b.region, "
        "b.cid");
  CHECK(grammar::Render(stages.stages[1]) ==
        "TRANSFORM trellis.__trellis_sub_8 FROM blocked AS b SELECT b.region AS k1, count(*) AS n, "
        "count(b.cid) AS v WHERE (b.region) IS NOT NULL GROUP BY b.region");
  CHECK(grammar::Render(stages.owner) ==
        "TRANSFORM ok_orders FROM orders AS o LEFT JOIN trellis.__trellis_sub_7 AS __trellis_s1 ON "
        "o.region = __trellis_s1.k1 AND o.customer_id = __trellis_s1.k2 LEFT JOIN "
        "trellis.__trellis_sub_8 AS __trellis_s2 ON o.region = __trellis_s2.k1 SELECT o.id AS id "
        "WHERE (coalesce(\"__trellis_s2\".\"n\", 0) = 0 OR (\"o\".\"customer_id\" IS NOT NULL AND "
        "\"__trellis_s1\".\"n\" IS NULL AND \"__trellis_s2\".\"n\" = \"__trellis_s2\".\"v\"))");
}

TEST_CASE("an uncorrelated subquery reads a one-row grouping through a copy of the FROM table",
          "[plan][subquery]") {
  auto stages = Compile(
      "TRANSFORM rich FROM orders o SELECT o.id WHERE o.total > (SELECT avg(total) FROM orders) "
      "AND o.customer_id NOT IN (SELECT cid FROM blocked) AND EXISTS (SELECT 1 FROM flags WHERE "
      "active)");
  REQUIRE(stages.stages.size() == 4);
  REQUIRE(stages.from_copy);
  CHECK(grammar::Render(*stages.from_copy) ==
        "TRANSFORM trellis.__trellis_sub_11 FROM orders AS o SELECT \"o\".\"id\" AS id, "
        "\"o\".\"customer_id\" AS customer_id, \"o\".\"total\" AS total, true AS trellis_one");
  CHECK(grammar::Render(stages.stages[0]) ==
        "TRANSFORM trellis.__trellis_sub_7 FROM orders SELECT avg(total) AS a1");
  CHECK(grammar::Render(stages.stages[2]) ==
        "TRANSFORM trellis.__trellis_sub_9 FROM blocked SELECT count(*) AS n, count(cid) AS v");
  CHECK(grammar::Render(stages.owner) ==
        "TRANSFORM rich FROM trellis.__trellis_sub_11 AS o LEFT JOIN trellis.__trellis_sub_7 AS "
        "__trellis_s1 ON o.trellis_one = __trellis_s1.__trellis_all LEFT JOIN "
        "trellis.__trellis_sub_8 AS __trellis_s2 ON o.customer_id = __trellis_s2.k1 LEFT JOIN "
        "trellis.__trellis_sub_9 AS __trellis_s3 ON o.trellis_one = __trellis_s3.__trellis_all "
        "LEFT JOIN trellis.__trellis_sub_10 AS __trellis_s4 ON o.trellis_one = "
        "__trellis_s4.__trellis_all SELECT o.id AS id WHERE ((o.total) > "
        "(\"__trellis_s1\".\"a1\")) AND (coalesce(\"__trellis_s3\".\"n\", 0) = 0 OR "
        "(\"o\".\"customer_id\" IS NOT NULL AND \"__trellis_s2\".\"n\" IS NULL AND "
        "\"__trellis_s3\".\"n\" = \"__trellis_s3\".\"v\")) AND "
        "(coalesce(\"__trellis_s4\".\"n\", 0) > 0)");
}

TEST_CASE("a grouped statement keeps its grouping over the joined stages", "[plan][subquery]") {
  auto stages = Compile(
      "TRANSFORM q4 FROM orders o SELECT o.priority, count(*) AS n WHERE o.day >= 10 AND EXISTS "
      "(SELECT 1 FROM lineitem l WHERE l.order_id = o.id AND l.committed < l.received) GROUP BY "
      "o.priority");
  CHECK(grammar::Render(stages.owner) ==
        "TRANSFORM q4 FROM orders AS o JOIN trellis.__trellis_sub_7 AS __trellis_s1 ON o.id = "
        "__trellis_s1.k1 SELECT o.priority AS priority, count(*) AS n WHERE o.day >= 10 "
        "AND true GROUP BY o.priority");
  CHECK(stages.owner.Groups());
}

TEST_CASE("strings, comments and BETWEEN do not split a subquery's conditions",
          "[plan][subquery]") {
  auto s = Statement(
      "TRANSFORM t FROM orders o SELECT o.id WHERE o.note <> 'select and' AND EXISTS (SELECT 1 "
      "FROM lines l WHERE l.qty BETWEEN 1 AND 5 AND o.id = l.order_id /* and o.x = l.y */)");
  REQUIRE(s.subqueries.size() == 1);
  CHECK(s.subqueries[0].where == std::optional<std::string>("(l.qty BETWEEN 1 AND 5)"));
  CHECK(s.subqueries[0].correlations ==
        std::vector<grammar::Correlation>{grammar::Correlation{"id", "l.order_id"}});
  // No subquery at all: "select" in a string is not one.
  CHECK_FALSE(Statement("TRANSFORM t FROM o SELECT id WHERE note = '(select 1)'").HasSubqueries());
}

TEST_CASE("a subquery that joins tables, or holds subqueries, reads a query of its own",
          "[grammar][subquery]") {
  // TPC-H Q2's shape: a join inside a correlated comparison.
  const grammar::TransformStmt q2 = Statement(
      "TRANSFORM t FROM part p SELECT p.id WHERE p.cost = (SELECT 2 * min(x.cost) FROM partsupp x "
      "JOIN supplier y ON x.supp = y.id WHERE x.part = p.id AND y.region = 'EU')");
  REQUIRE(q2.subqueries.size() == 1);
  const auto& sq = q2.subqueries[0];
  CHECK(sq.use == grammar::SubqueryUse::kCompare);
  CHECK(sq.outer == "p");
  REQUIRE(sq.correlations.size() == 1);
  CHECK(sq.correlations[0] == grammar::Correlation{"id", "trellis_subquery.c1"});
  CHECK(sq.item == "2 * min(trellis_subquery.a1)");
  REQUIRE(sq.item_uses.size() == 1);
  CHECK(sq.item.substr(sq.item_uses[0].begin, sq.item_uses[0].end - sq.item_uses[0].begin) ==
        "min(trellis_subquery.a1)");
  CHECK_FALSE(sq.where);
  CHECK(sq.from.Qualifier() == "trellis_subquery");
  REQUIRE(sq.body.size() == 1);
  CHECK(grammar::Render(sq.body[0]) ==
        "TRANSFORM trellis_subquery FROM partsupp AS x JOIN supplier AS y ON x.supp = y.id SELECT "
        "x.part AS c1, x.cost AS a1 WHERE y.region = 'EU'");
  CHECK(q2.HasDerived());
  // As written, still.
  CHECK_THAT(grammar::Render(q2), Contains("JOIN supplier y ON x.supp = y.id WHERE x.part = p.id"));

  // TPC-H Q20's shape: IN over a subquery holding an IN and a correlated
  // comparison of its own; the body is a statement with subqueries.
  const grammar::TransformStmt q20 = Statement(
      "TRANSFORM t FROM supplier s SELECT s.name WHERE s.id IN (SELECT ps.supp FROM partsupp ps "
      "WHERE ps.part IN (SELECT p.id FROM part p WHERE p.name LIKE 'f%') AND ps.qty > (SELECT "
      "0.5 * sum(l.qty) FROM lineitem l WHERE l.part = ps.part AND l.supp = ps.supp))");
  REQUIRE(q20.subqueries.size() == 1);
  const auto& in = q20.subqueries[0];
  CHECK(in.use == grammar::SubqueryUse::kIn);
  CHECK(in.tested == grammar::Correlation{"id", "trellis_subquery.v"});
  REQUIRE(in.body.size() == 1);
  CHECK(in.body[0].subqueries.size() == 2);
  CHECK(grammar::Render(in.body[0]) ==
        "TRANSFORM trellis_subquery FROM partsupp AS ps SELECT ps.supp AS v WHERE ps.part IN "
        "(SELECT p.id FROM part p WHERE p.name LIKE 'f%') AND ps.qty > (SELECT 0.5 * "
        "sum(l.qty) FROM lineitem l WHERE l.part = ps.part AND l.supp = ps.supp)");

  // Uncorrelated EXISTS over a join: the body selects a constant.
  const grammar::TransformStmt exists = Statement(
      "TRANSFORM t FROM orders o SELECT o.id WHERE EXISTS (SELECT 1 FROM l JOIN m ON l.a = m.a)");
  REQUIRE(exists.subqueries.size() == 1);
  REQUIRE(exists.subqueries[0].body.size() == 1);
  CHECK(grammar::Render(exists.subqueries[0].body[0]) ==
        "TRANSFORM trellis_subquery FROM l JOIN m ON l.a = m.a SELECT true AS one");
}

TEST_CASE("EXISTS correlated by <> counts by the equalities, less the rows equal on it",
          "[plan][subquery]") {
  // TPC-H Q21's EXISTS: another lineitem of the order, from another supplier.
  const std::string text =
      "TRANSFORM late FROM lineitem l1 SELECT l1.k WHERE EXISTS (SELECT 1 FROM lineitem l2 WHERE "
      "l2.ok = l1.ok AND l2.sk <> l1.sk) AND NOT EXISTS (SELECT 1 FROM lineitem l3 WHERE l3.ok = "
      "l1.ok AND l1.sk != l3.sk AND l3.late)";
  const grammar::TransformStmt stmt = Statement(text);
  REQUIRE(stmt.subqueries.size() == 2);
  const auto& exists = stmt.subqueries[0];
  CHECK(exists.outer == "l1");
  REQUIRE(exists.correlations.size() == 1);
  CHECK(exists.correlations[0] == grammar::Correlation{"ok", "l2.ok"});
  CHECK(exists.differs == grammar::Correlation{"sk", "l2.sk"});
  CHECK_FALSE(exists.where);
  // Written the other way round, and beside a local condition.
  CHECK(stmt.subqueries[1].differs == grammar::Correlation{"sk", "l3.sk"});
  CHECK(stmt.subqueries[1].where == std::optional<std::string>("(l3.late)"));
  CHECK(plan::HiddenPartsNeeded(stmt) == 4);
  CHECK_FALSE(plan::NeedsFromCopy(stmt));

  auto stages = Compile(text);
  REQUIRE(stages.stages.size() == 4);
  // The count by the equalities, of rows whose <> column is not NULL (<>
  // never matches NULL)...
  CHECK(grammar::Render(stages.stages[0]) ==
        "TRANSFORM trellis.__trellis_sub_7 FROM lineitem AS l2 SELECT l2.ok AS k1, count(*) AS n "
        "WHERE (l2.ok) IS NOT NULL AND (l2.sk) IS NOT NULL GROUP BY l2.ok");
  // ... and the count of those also equal on it.
  CHECK(grammar::Render(stages.stages[1]) ==
        "TRANSFORM trellis.__trellis_sub_8 FROM lineitem AS l2 SELECT l2.ok AS k1, l2.sk AS k2, "
        "count(*) AS n WHERE (l2.ok) IS NOT NULL AND (l2.sk) IS NOT NULL GROUP BY l2.ok, l2.sk");
  CHECK(grammar::Render(stages.stages[2]) ==
        "TRANSFORM trellis.__trellis_sub_9 FROM lineitem AS l3 SELECT l3.ok AS k1, count(*) AS n "
        "WHERE (l3.late) AND (l3.ok) IS NOT NULL AND (l3.sk) IS NOT NULL GROUP BY l3.ok");
  CHECK(stages.stage_subquery == std::vector<std::size_t>{0, 0, 1, 1});
  // EXISTS joins its first count INNER (a row without a match by the
  // equalities has none), the second LEFT; NOT EXISTS both LEFT. An outer
  // NULL makes EXISTS false and NOT EXISTS true.
  CHECK(grammar::Render(stages.owner) ==
        "TRANSFORM late FROM lineitem AS l1 JOIN trellis.__trellis_sub_7 AS __trellis_s1 ON l1.ok "
        "= __trellis_s1.k1 LEFT JOIN trellis.__trellis_sub_8 AS __trellis_s2 ON l1.ok = "
        "__trellis_s2.k1 AND l1.sk = __trellis_s2.k2 LEFT JOIN trellis.__trellis_sub_9 AS "
        "__trellis_s3 ON l1.ok = __trellis_s3.k1 LEFT JOIN trellis.__trellis_sub_10 AS "
        "__trellis_s4 ON l1.ok = __trellis_s4.k1 AND l1.sk = __trellis_s4.k2 SELECT l1.k AS k "
        "WHERE (\"l1\".\"sk\" IS NOT NULL AND coalesce(\"__trellis_s1\".\"n\", 0) > "
        "coalesce(\"__trellis_s2\".\"n\", 0)) AND (\"l1\".\"sk\" IS NULL OR "
        "coalesce(\"__trellis_s3\".\"n\", 0) = coalesce(\"__trellis_s4\".\"n\", 0))");

  // A <> alone: the count by no equality is one row for the whole table,
  // read through the FROM table's copy.
  auto alone = Compile(
      "TRANSFORM t FROM orders o SELECT o.id WHERE EXISTS (SELECT 1 FROM l WHERE l.c <> "
      "o.customer_id)");
  REQUIRE(alone.stages.size() == 2);
  REQUIRE(alone.from_copy);
  CHECK(grammar::Render(alone.stages[0]) ==
        "TRANSFORM trellis.__trellis_sub_7 FROM l SELECT count(*) AS n WHERE (l.c) IS NOT NULL");
  CHECK_THAT(grammar::Render(alone.owner),
             Contains("LEFT JOIN trellis.__trellis_sub_7 AS __trellis_s1 ON o.trellis_one = "
                      "__trellis_s1.__trellis_all LEFT JOIN trellis.__trellis_sub_8 AS "
                      "__trellis_s2 ON o.customer_id = __trellis_s2.k1"));

  // Over a query of its own, the <> column is a column of it too.
  const grammar::TransformStmt body = Statement(
      "TRANSFORM t FROM orders o SELECT o.id WHERE NOT EXISTS (SELECT 1 FROM l JOIN m ON l.a = "
      "m.a WHERE l.o = o.id AND m.s <> o.s AND m.x > 1)");
  REQUIRE(body.subqueries.size() == 1);
  CHECK(body.subqueries[0].differs == grammar::Correlation{"s", "trellis_subquery.c2"});
  REQUIRE(body.subqueries[0].body.size() == 1);
  CHECK(grammar::Render(body.subqueries[0].body[0]) ==
        "TRANSFORM trellis_subquery FROM l JOIN m ON l.a = m.a SELECT l.o AS c1, m.s AS c2 WHERE "
        "m.x > 1");
}

TEST_CASE("a subquery in HAVING reads the grouping as a query in FROM, compared in WHERE",
          "[grammar][subquery]") {
  // TPC-H Q11's shape: a total per key compared to a share of the total.
  const std::string text =
      "TRANSFORM t FROM ps JOIN s ON ps.s = s.id SELECT ps.k, sum(ps.v * ps.q) AS value "
      "WHERE s.n = 'DE' GROUP BY ps.k HAVING count(*) > 1 AND sum(ps.v * ps.q) > (SELECT "
      "sum(x.v * x.q) * 0.0001 FROM ps x JOIN s y ON x.s = y.id WHERE y.n = 'DE') AND max(ps.v) < "
      "9";
  const grammar::TransformStmt stmt = Statement(text);
  CHECK(stmt.HasDerived());
  CHECK_FALSE(stmt.HasSubqueries());
  // Only the statement's own aggregates are HAVING's uses.
  REQUIRE(stmt.having_uses.size() == 3);
  CHECK(stmt.having_uses[1].call.argument == std::optional<std::string>("ps.v * ps.q"));
  CHECK(stmt.having_uses[2].call.argument == std::optional<std::string>("ps.v"));
  // As written.
  CHECK_THAT(grammar::Render(stmt),
             Contains("HAVING count(*) > 1 AND sum(ps.v * ps.q) > (SELECT sum(x.v * x.q) * 0.0001 "
                      "FROM ps x JOIN s y ON x.s = y.id WHERE y.n = 'DE') AND max(ps.v) < 9"));
  REQUIRE(stmt.having_query.size() == 1);
  const grammar::TransformStmt& read = stmt.having_query[0];
  CHECK(read.target == stmt.target);
  CHECK(grammar::Render(read) ==
        "TRANSFORM t FROM (FROM ps JOIN s ON ps.s = s.id SELECT ps.k AS k, sum(ps.v * ps.q) AS "
        "value, sum(ps.v * ps.q) AS trellis_having_1 WHERE s.n = 'DE' GROUP BY ps.k HAVING "
        "count(*) > 1 AND max(ps.v) < 9) AS trellis_grouped SELECT trellis_grouped.k AS k, "
        "trellis_grouped.value AS value WHERE trellis_grouped.trellis_having_1 > (SELECT "
        "sum(x.v * x.q) * 0.0001 FROM ps x JOIN s y ON x.s = y.id WHERE y.n = 'DE')");
  REQUIRE(read.subqueries.size() == 1);
  CHECK(read.subqueries[0].use == grammar::SubqueryUse::kCompare);
  CHECK(read.subqueries[0].outer.empty());
  // Read again from its rendering (as a stored definition is bound), the
  // statement is the same.
  CHECK(Statement(grammar::Render(stmt)) == stmt);

  // The subquery first, turned round; EXISTS as written; no other HAVING.
  const grammar::TransformStmt turned = Statement(
      "TRANSFORM t FROM ps SELECT ps.k, count(*) AS n GROUP BY ps.k HAVING (SELECT max(x.v) "
      "FROM r x) < count(*) AND NOT EXISTS (SELECT 1 FROM r WHERE r.closed)");
  REQUIRE(turned.having_query.size() == 1);
  CHECK(grammar::Render(turned.having_query[0]) ==
        "TRANSFORM t FROM (FROM ps SELECT ps.k AS k, count(*) AS n, count(*) AS trellis_having_1 "
        "GROUP BY ps.k) AS trellis_grouped SELECT trellis_grouped.k AS k, trellis_grouped.n AS n "
        "WHERE trellis_grouped.trellis_having_1 > (SELECT max(x.v) FROM r x) AND NOT EXISTS "
        "(SELECT 1 FROM r WHERE r.closed)");
}

TEST_CASE("ALTER of a statement with a subquery in HAVING is refused naming the subquery",
          "[plan][subquery][alter]") {
  // The statement is read as a query in FROM and a WHERE over it; the
  // refusal names what the user wrote, and the fix.
  const Status refused = plan::RefuseAlterOfStages(
      "big_parts",
      "TRANSFORM big_parts FROM ps SELECT ps.k, sum(ps.v) AS value GROUP BY ps.k HAVING "
      "sum(ps.v) > (SELECT sum(x.v) * 0.01 FROM ps x)");
  CHECK(refused.code() == Code::kUnsupported);
  CHECK_THAT(refused.message(), Contains("a subquery in HAVING"));
  CHECK_THAT(refused.message(), Contains("DROP TRANSFORM big_parts and define it again"));
  CHECK_THAT(refused.message(), !Contains("FROM or WITH"));
  CHECK_THAT(refused.message(), !Contains("trellis_grouped"));
  // A query the user wrote in FROM is still named as such.
  const Status derived = plan::RefuseAlterOfStages(
      "d", "TRANSFORM d FROM (FROM ps SELECT ps.k, ps.v) AS s SELECT s.k, s.v");
  CHECK_THAT(derived.message(), Contains("its queries in FROM or WITH"));
}

TEST_CASE("each subquery form that cannot be compiled is refused by name with the fix",
          "[grammar][subquery]") {
  const std::string head = "TRANSFORM t FROM orders o SELECT o.id WHERE ";
  struct Case {
    std::string where;
    std::string message;
  };
  const Case cases[] = {
      {"o.a = 1 OR EXISTS (SELECT 1 FROM l WHERE l.o = o.id)", "a subquery under OR"},
      {"NOT (o.a < (SELECT max(x) FROM l WHERE l.o = o.id))", "NOT around a subquery"},
      {"o.a = ANY (SELECT x FROM l)", "ANY, SOME or ALL"},
      {"o.a < (SELECT max(l.x) - (SELECT 1 FROM m) FROM l WHERE l.o = o.id)",
       "a subquery inside a subquery's SELECT item"},
      {"EXISTS (SELECT 1 FROM l WHERE l.o > o.id)", "correlated by anything but equalities"},
      // <> correlates EXISTS and NOT EXISTS only, and once.
      {"o.a IN (SELECT l.x FROM l WHERE l.o <> o.id)",
       "a correlation by <> is supported in EXISTS"},
      {"NOT EXISTS (SELECT 1 FROM l WHERE l.o <> o.id AND l.p != o.p)", "correlated by two <>"},
      {"o.a < (SELECT max(l.x) FROM l WHERE l.o = o.b AND l.p <> o.id)",
       "a correlation by <> is supported in EXISTS"},
      {"EXISTS (SELECT 1 FROM l WHERE l.o <> o.id + 1)", "correlated by anything but equalities"},
      {"EXISTS (SELECT 1 FROM l WHERE l.o = o.id + 1)", "correlated by anything but equalities"},
      {"EXISTS (SELECT 1 FROM l WHERE l.o = o.id OR l.p = 2)",
       "correlated by anything but equalities"},
      {"EXISTS (SELECT 1 FROM l, m WHERE l.o = o.id)", "a comma-separated FROM in a subquery"},
      {"EXISTS (SELECT 1 FROM l JOIN m ON l.a = m.a WHERE l.o = o.id GROUP BY l.o)",
       "GROUP BY in a subquery"},
      // A subquery inside a subquery sees only the tables around it there.
      {"EXISTS (SELECT 1 FROM l WHERE l.o = o.id AND EXISTS (SELECT 1 FROM m WHERE m.x = o.y))",
       "correlated by anything but equalities"},
      // A subquery with a query of its own refuses what that query cannot be.
      {"EXISTS (SELECT 1 FROM l JOIN m ON l.a > m.a WHERE l.o = o.id)", "in this subquery"},
      {"EXISTS (SELECT 1 FROM LATERAL f(o.id) x)", "LATERAL"},
      {"EXISTS (SELECT 1 FROM l WHERE l.o = o.id GROUP BY l.o)", "GROUP BY in a subquery"},
      {"EXISTS (SELECT 1 FROM l WHERE l.o = o.id LIMIT 1)", "LIMIT in a subquery"},
      // The clause right after the table, with no WHERE (TPC-H Q18's IN).
      {"o.id IN (SELECT l.o FROM l GROUP BY l.o HAVING sum(l.q) > 300)", "GROUP BY in a subquery"},
      {"EXISTS (SELECT 1 FROM l ORDER BY 1)", "ORDER BY in a subquery"},
      {"EXISTS (SELECT count(*) FROM l WHERE l.o = o.id)", "always true"},
      {"o.a IN (SELECT max(x) FROM l)", "IN (SELECT <aggregate> ...)"},
      {"o.a < (SELECT x FROM l WHERE l.o = o.id)", "must compute an aggregate"},
      {"o.a < (SELECT max(x) + o.b FROM l WHERE l.o = o.id)", "SELECT item uses a column"},
      {"o.a + 1 IN (SELECT x FROM l)", "must be a column of one of the statement's tables"},
      {"(SELECT max(x) FROM l WHERE l.o = o.id) + 1 > 2", "this use of a subquery"},
      {"EXISTS (SELECT 1 FROM l WHERE l.o = o.id) = true", "this use of a subquery"},
      {"o.a < (SELECT max(x) FROM l WHERE l.o = o.id) AND o.b < (SELECT max(x) FROM l WHERE l.o = "
       "o.id) + (SELECT 1 FROM m)",
       "two subqueries in one condition"},
  };
  for (const auto& c : cases) {
    INFO(c.where);
    CHECK_THAT(Unsupported(head + c.where).message, Contains(c.message));
  }
  // Aggregates stay refused in WHERE, outside and inside a subquery's WHERE.
  for (const std::string where : {"count(*) > 1 AND EXISTS (SELECT 1 FROM l WHERE l.o = o.id)",
                                  "EXISTS (SELECT 1 FROM l WHERE l.o = o.id AND sum(l.x) > 1)"}) {
    auto parsed = grammar::Parse(head + where);
    REQUIRE(std::holds_alternative<grammar::ParseError>(parsed));
    CHECK_THAT(std::get<grammar::ParseError>(parsed).message, Contains("not allowed in WHERE"));
  }
  // A subquery in HAVING must be uncorrelated, compared or under EXISTS.
  {
    const auto error = Unsupported(
        "TRANSFORM t FROM ps SELECT ps.k, sum(ps.v) AS v GROUP BY ps.k "
        "HAVING sum(ps.v) > (SELECT sum(x.v) * 0.0001 FROM ps x WHERE x.k = ps.k)");
    CHECK_THAT(error.message,
               Contains("a subquery in HAVING correlated with the statement is not supported"));
    CHECK(error.position == 81);
  }
  CHECK_THAT(Unsupported("TRANSFORM t FROM ps SELECT ps.k, sum(ps.v) AS v GROUP BY ps.k "
                         "HAVING ps.k IN (SELECT x.k FROM r x)")
                 .message,
             Contains("IN and NOT IN (SELECT ...) in HAVING are not supported"));
  CHECK_THAT(Unsupported("TRANSFORM t FROM ps SELECT ps.k, sum(ps.v) AS trellis_having_1 GROUP BY "
                         "ps.k HAVING sum(ps.v) > (SELECT sum(x.v) FROM r x)")
                 .message,
             Contains("is Trellis's in a statement with a subquery in HAVING"));
  CHECK_THAT(Unsupported("TRANSFORM t FROM ps SELECT ps.k, sum(ps.v) AS v GROUP BY ps.k "
                         "HAVING sum(ps.v) > (SELECT sum(x.v) FROM r x) OR count(*) > 1")
                 .message,
             Contains("a subquery under OR"));
  // In a SELECT item and in GROUP BY, likewise (their aggregates and
  // columns were read as the statement's).
  CHECK_THAT(Unsupported("TRANSFORM t FROM c SELECT c.name, (SELECT count(*) FROM o WHERE "
                         "o.cid = c.id) AS n")
                 .message,
             Contains("a subquery in a SELECT item is not supported"));
  CHECK_THAT(Unsupported("TRANSFORM t FROM c SELECT count(*) AS n GROUP BY (SELECT max(k) FROM r)")
                 .message,
             Contains("a subquery in GROUP BY is not supported"));
  // Correlated with two tables of the statement.
  CHECK_THAT(
      Unsupported("TRANSFORM t FROM orders o JOIN c ON o.cid = c.id SELECT o.id WHERE EXISTS "
                  "(SELECT 1 FROM l WHERE l.o = o.id AND l.c = c.id)")
          .message,
      Contains("correlated with two tables"));
}

}  // namespace
}  // namespace trellis::test
