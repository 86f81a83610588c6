// Tests of Trellis's statement grammar (engine/src/grammar, spec/grammar.md).
#include <catch2/catch.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "grammar/address.h"
#include "grammar/parser.h"
#include "grammar/quote.h"
#include "grammar/render.h"

namespace trellis::grammar {
namespace {

using Catch::Matchers::Contains;

template <typename T>
T ParseAs(std::string_view text) {
  auto result = Parse(text);
  if (auto* error = std::get_if<ParseError>(&result)) FAIL(error->message);
  auto& statement = std::get<Statement>(result);
  REQUIRE(std::holds_alternative<T>(statement));
  return std::get<T>(statement);
}

ParseError ParseFails(std::string_view text) {
  auto result = Parse(text);
  REQUIRE(std::holds_alternative<ParseError>(result));
  return std::get<ParseError>(result);
}

QualifiedName Name(std::string name) { return QualifiedName{std::nullopt, std::move(name)}; }

QualifiedName Name(std::string schema, std::string name) {
  return QualifiedName{std::move(schema), std::move(name)};
}

// ---------------------------------------------------------------- TRANSFORM

TEST_CASE("minimal transform parses into target, source and one select item", "[grammar]") {
  auto s = ParseAs<TransformStmt>("TRANSFORM widget_prices FROM widgets SELECT price AS price");
  CHECK(s.target == Name("widget_prices"));
  CHECK(s.source.table == Name("widgets"));
  CHECK_FALSE(s.source.alias);
  CHECK(s.joins.empty());
  REQUIRE(s.select.size() == 1);
  CHECK(s.select[0].expr == "price");
  CHECK(s.select[0].alias == "price");
  CHECK(s.select[0].position == 44);
  CHECK_FALSE(s.where);
  CHECK(s.group_by.empty());
  CHECK_FALSE(s.without_source_index);
}

TEST_CASE("keywords are case-insensitive and plain names fold to lower case", "[grammar]") {
  auto s = ParseAs<TransformStmt>("transform Widget_Prices from WIDGETS select Price as PRICE");
  CHECK(s.target == Name("widget_prices"));
  CHECK(s.source.table == Name("widgets"));
  CHECK(s.select[0].expr == "Price");  // expressions keep their text; PostgreSQL folds them
  CHECK(s.select[0].alias == "price");
}

TEST_CASE("quoted names keep their case and undouble embedded quotes", "[grammar]") {
  auto s = ParseAs<TransformStmt>(
      R"(TRANSFORM "Mixed Case"."Tbl""x" FROM "Src" SELECT a AS "Col A", b AS "from")");
  CHECK(s.target == Name("Mixed Case", "Tbl\"x"));
  CHECK(s.source.table == Name("Src"));
  CHECK(s.select[0].alias == "Col A");
  CHECK(s.select[1].alias == "from");
}

TEST_CASE("schema-qualified target and source, quoted or plain per part", "[grammar]") {
  auto s = ParseAs<TransformStmt>("TRANSFORM Reports.\"Daily\" FROM app.orders SELECT id AS id");
  CHECK(s.target == Name("reports", "Daily"));
  CHECK(s.source.table == Name("app", "orders"));
}

TEST_CASE("source alias with or without AS", "[grammar]") {
  CHECK(ParseAs<TransformStmt>("TRANSFORM t FROM s AS a SELECT a.x AS x").source.alias == "a");
  CHECK(ParseAs<TransformStmt>("TRANSFORM t FROM s a SELECT a.x AS x").source.alias == "a");
  // Unreserved keywords are ordinary names.
  CHECK(ParseAs<TransformStmt>("TRANSFORM t FROM s source SELECT 1 AS x").source.alias == "source");
}

TEST_CASE("select items keep exact text, trimmed, and their byte positions", "[grammar]") {
  auto s = ParseAs<TransformStmt>("TRANSFORM t FROM s SELECT  a  +  b   AS sum , lower(name) AS n");
  REQUIRE(s.select.size() == 2);
  CHECK(s.select[0].expr == "a  +  b");
  CHECK(s.select[0].position == 27);
  CHECK(s.select[0].alias == "sum");
  CHECK(s.select[1].expr == "lower(name)");
  CHECK(s.select[1].position == 46);
}

TEST_CASE("AS inside brackets is not a delimiter", "[grammar]") {
  auto s = ParseAs<TransformStmt>(
      "TRANSFORM t FROM s SELECT CAST(price AS numeric(10, 2)) AS p, qty::int AS q, "
      "ARRAY[CAST(a AS text), b][1] AS c, (x) AS x");
  REQUIRE(s.select.size() == 4);
  CHECK(s.select[0].expr == "CAST(price AS numeric(10, 2))");
  CHECK(s.select[1].expr == "qty::int");
  CHECK(s.select[2].expr == "ARRAY[CAST(a AS text), b][1]");
  CHECK(s.select[3].expr == "(x)");
}

TEST_CASE("string literals hide delimiters and quotes", "[grammar]") {
  auto s = ParseAs<TransformStmt>(
      "TRANSFORM t FROM s SELECT 'a, b AS c' AS a, 'it''s; (' AS b, E'x\\' AS ) WHERE' AS c, "
      "$$ AS , ; $$ AS d, $fn$ it's $$ ) $fn$ AS e, e'\\\\' AS f");
  REQUIRE(s.select.size() == 6);
  CHECK(s.select[0].expr == "'a, b AS c'");
  CHECK(s.select[1].expr == "'it''s; ('");
  CHECK(s.select[2].expr == "E'x\\' AS ) WHERE'");
  CHECK(s.select[3].expr == "$$ AS , ; $$");
  CHECK(s.select[4].expr == "$fn$ it's $$ ) $fn$");
  CHECK(s.select[5].expr == "e'\\\\'");
}

TEST_CASE("positional parameters and identifiers with $ are not dollar quotes", "[grammar]") {
  auto s = ParseAs<TransformStmt>("TRANSFORM t FROM s SELECT a$b$ + $1 AS x, c AS y");
  REQUIRE(s.select.size() == 2);
  CHECK(s.select[0].expr == "a$b$ + $1");
}

TEST_CASE("comments are allowed between tokens and trimmed off expression ends", "[grammar]") {
  auto s = ParseAs<TransformStmt>(
      "/* lead */ TRANSFORM -- the target\n t FROM s SELECT /* a /* nested AS */ , */ a -- AS z\n"
      " + b /* tail */ AS x -- done");
  REQUIRE(s.select.size() == 1);
  CHECK(s.select[0].expr == "a -- AS z\n + b");
  CHECK(s.select[0].alias == "x");
}

TEST_CASE("quoted identifiers inside expressions hide delimiters", "[grammar]") {
  auto s = ParseAs<TransformStmt>(R"(TRANSFORM t FROM s SELECT "weird AS, col" AS w)");
  CHECK(s.select[0].expr == R"("weird AS, col")");
}

TEST_CASE("a keyword right after a dot is a column name", "[grammar]") {
  auto s = ParseAs<TransformStmt>("TRANSFORM t FROM s SELECT s.where + s.as AS x WHERE s.group");
  CHECK(s.select[0].expr == "s.where + s.as");
  CHECK(s.where == "s.group");
}

TEST_CASE("WHERE, GROUP BY and WITHOUT SOURCE INDEX", "[grammar]") {
  auto s = ParseAs<TransformStmt>(
      "TRANSFORM totals FROM orders SELECT region AS region, sum(amount) AS total "
      "WHERE status = 'paid' AND amount > 0 GROUP BY region, date_trunc('day', at) "
      "WITHOUT SOURCE INDEX;");
  CHECK(s.where == "status = 'paid' AND amount > 0");
  REQUIRE(s.group_by.size() == 2);
  CHECK(s.group_by[0] == "region");
  CHECK(s.group_by[1] == "date_trunc('day', at)");
  CHECK(s.without_source_index);
}

TEST_CASE("FROM and GROUP inside SQL expressions are not clause keywords", "[grammar]") {
  auto s = ParseAs<TransformStmt>(
      "TRANSFORM t FROM s SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY v) AS m, "
      "extract(year FROM at) AS y WHERE a IS DISTINCT FROM b GROUP BY k");
  CHECK(s.select[0].expr == "percentile_cont(0.5) WITHIN GROUP (ORDER BY v)");
  CHECK(s.select[1].expr == "extract(year FROM at)");
  CHECK(s.where == "a IS DISTINCT FROM b");
}

TEST_CASE("a column named without is not the WITHOUT SOURCE INDEX clause", "[grammar]") {
  auto s = ParseAs<TransformStmt>(
      "TRANSFORM t FROM s SELECT without AS w WHERE without > 1 WITHOUT SOURCE INDEX");
  CHECK(s.select[0].expr == "without");
  CHECK(s.where == "without > 1");
  CHECK(s.without_source_index);
}

TEST_CASE("a trailing semicolon and comments after it are allowed", "[grammar]") {
  auto s = ParseAs<TransformStmt>("TRANSFORM t FROM s SELECT a AS a ; -- bye\n/* end */");
  CHECK(s.select[0].alias == "a");
}

TEST_CASE("plain identifiers may contain UTF-8 and fold only ASCII", "[grammar]") {
  auto s = ParseAs<TransformStmt>("TRANSFORM Größen FROM Maße SELECT Länge AS Länge");
  CHECK(s.target == Name("größen"));
  CHECK(s.source.table == Name("maße"));
  CHECK(s.select[0].alias == "länge");
}

// --------------------------------------------------------------------- JOIN

using Pair = std::pair<std::string, std::string>;

TEST_CASE("JOIN pairs come out earlier table's column first whatever the written order",
          "[grammar]") {
  auto s = ParseAs<TransformStmt>(
      "TRANSFORM t FROM widgets w JOIN makers AS m ON m.id = w.maker_id AND w.region = m.region "
      "SELECT w.id AS id, m.name AS maker");
  REQUIRE(s.joins.size() == 1);
  CHECK(s.joins[0].kind == JoinKind::kInner);
  CHECK(s.joins[0].table.table == Name("makers"));
  CHECK(s.joins[0].table.alias == "m");
  CHECK(s.joins[0].to == "w");
  REQUIRE(s.joins[0].on.size() == 2);
  CHECK(s.joins[0].on[0] == Pair("maker_id", "id"));
  CHECK(s.joins[0].on[1] == Pair("region", "region"));
}

TEST_CASE("joins chain: INNER and LEFT [OUTER], each matched to one earlier table", "[grammar]") {
  auto s = ParseAs<TransformStmt>(
      "TRANSFORM t FROM orders o INNER JOIN customers c ON o.customer_id = c.id "
      "LEFT OUTER JOIN regions r ON r.id = c.region_id LEFT JOIN shops ON shops.id = o.shop_id "
      "SELECT o.id, c.name, r.label WHERE r.vat > 0");
  REQUIRE(s.joins.size() == 3);
  CHECK(s.joins[0].kind == JoinKind::kInner);
  CHECK(s.joins[0].to == "o");
  CHECK(s.joins[1].kind == JoinKind::kLeft);
  CHECK(s.joins[1].to == "c");
  CHECK(s.joins[1].on[0] == Pair("region_id", "id"));
  CHECK(s.joins[2].kind == JoinKind::kLeft);
  CHECK(s.joins[2].to == "o");
  CHECK(s.joins[2].table.Qualifier() == "shops");
  CHECK(s.where == "r.vat > 0");
}

TEST_CASE("RIGHT and FULL [OUTER] joins parse; which shapes a plan keeps is the plan's question",
          "[grammar]") {
  auto s = ParseAs<TransformStmt>(
      "TRANSFORM t FROM orders o RIGHT JOIN customers c ON o.customer_id = c.id "
      "FULL OUTER JOIN regions r ON r.id = c.region_id RIGHT OUTER JOIN shops s ON s.r = r.id "
      "SELECT o.id");
  REQUIRE(s.joins.size() == 3);
  CHECK(s.joins[0].kind == JoinKind::kRight);
  CHECK(s.joins[1].kind == JoinKind::kFull);
  CHECK(s.joins[2].kind == JoinKind::kRight);
  CHECK(s.joins[2].to == "r");
  const auto e = ParseFails("TRANSFORM t FROM o RIGHT c ON o.c = c.id SELECT 1");
  CHECK(e.message.find("JOIN after RIGHT") != std::string::npos);
}

TEST_CASE("JOIN without aliases qualifies by table name, schema left out", "[grammar]") {
  auto s = ParseAs<TransformStmt>(
      "TRANSFORM t FROM app.widgets JOIN app.makers ON makers.id = widgets.maker_id "
      "SELECT widgets.id AS id");
  CHECK(s.source.table == Name("app", "widgets"));
  CHECK(s.joins[0].table.table == Name("app", "makers"));
  CHECK(s.joins[0].on[0] == Pair("maker_id", "id"));
}

TEST_CASE("a self join works with two distinct aliases", "[grammar]") {
  auto s = ParseAs<TransformStmt>(
      "TRANSFORM t FROM nodes child JOIN nodes parent ON child.parent_id = parent.id "
      "SELECT parent.name AS parent_name");
  CHECK(s.source.alias == "child");
  CHECK(s.joins[0].table.alias == "parent");
  CHECK(s.joins[0].on[0] == Pair("parent_id", "id"));
}

TEST_CASE("JOIN ON compares unknown tables: error names the known ones", "[grammar]") {
  auto e = ParseFails("TRANSFORM t FROM w JOIN m ON x.id = m.id SELECT 1 AS a");
  CHECK(e.position == 29);
  CHECK(e.message ==
        "at position 29: unknown table \"x\" in the JOIN condition: expected \"w\" (the FROM "
        "table) or \"m\" (the joined table)");
  auto later = ParseFails("TRANSFORM t FROM w JOIN m ON m.id = w.m JOIN k ON k.id = r.k SELECT 1");
  CHECK_THAT(later.message, Contains("expected \"w\" (the FROM table), \"m\" or \"k\""));
}

TEST_CASE("JOIN ON must compare the joined table with an earlier one", "[grammar]") {
  auto e = ParseFails("TRANSFORM t FROM w JOIN m ON w.a = w.b SELECT 1 AS a");
  CHECK(e.position == 29);
  CHECK_THAT(e.message, Contains("must compare a column of the joined table \"m\""));
  auto later = ParseFails("TRANSFORM t FROM w JOIN m ON m.id = w.m JOIN k ON w.a = m.b SELECT 1");
  CHECK_THAT(later.message, Contains("must compare a column of the joined table \"k\""));
}

TEST_CASE("a joined table needs a name no earlier table has", "[grammar]") {
  auto e = ParseFails("TRANSFORM t FROM a.nodes JOIN b.nodes ON nodes.x = nodes.y SELECT 1 AS a");
  CHECK(e.position == 30);
  CHECK_THAT(e.message, Contains("two tables are called \"nodes\": give the joined table"));
}

TEST_CASE("JOIN ON sides must be qualified columns", "[grammar]") {
  auto e = ParseFails("TRANSFORM t FROM w JOIN m ON id = m.id SELECT 1 AS a");
  CHECK(e.position == 32);
  CHECK(e.message ==
        "at position 32: expected \".\" and a column name: each side of a JOIN condition is "
        "table.column, found \"=\"");
}

TEST_CASE("JOIN needs ON, and AND, JOIN or SELECT after the condition", "[grammar]") {
  auto missing_on = ParseFails("TRANSFORM t FROM w JOIN m SELECT 1 AS a");
  CHECK(missing_on.position == 26);
  CHECK(missing_on.message ==
        "at position 26: expected ON after the joined table, found \"SELECT\"");
  auto after = ParseFails("TRANSFORM t FROM w JOIN m ON w.a = m.b FOO SELECT 1 AS a");
  CHECK_THAT(after.message,
             Contains("expected AND, JOIN or SELECT after the JOIN condition, found \"FOO\""));
  CHECK_THAT(ParseFails("TRANSFORM t FROM w LEFT m ON w.a = m.b SELECT 1").message,
             Contains("expected JOIN after LEFT"));
}

// Each form a transform cannot maintain is refused by name (kUnsupported),
// with what would make it valid.
TEST_CASE("unsupported join forms are refused by name with the fix", "[grammar]") {
  struct Case {
    const char* text;
    const char* says;
  };
  const Case cases[] = {
      {"TRANSFORM t FROM w CROSS JOIN m SELECT 1", "a cross join (CROSS JOIN or a comma"},
      {"TRANSFORM t FROM w, m SELECT 1", "a cross join (CROSS JOIN or a comma"},
      {"TRANSFORM t FROM w NATURAL JOIN m SELECT 1", "NATURAL JOIN is not supported"},
      {"TRANSFORM t FROM w JOIN m USING (a) SELECT 1", "JOIN ... USING is not supported"},
      {"TRANSFORM t FROM w JOIN m ON w.a < m.b SELECT 1", "operator \"<\" is not supported"},
      {"TRANSFORM t FROM w JOIN m ON w.a <> m.b SELECT 1", "operator \"<>\" is not supported"},
      {"TRANSFORM t FROM w JOIN m ON w.a = m.b OR w.c = m.d SELECT 1",
       "OR in a JOIN condition is not supported"},
      {"TRANSFORM t FROM w JOIN (SELECT * FROM m) x ON w.a = x.b SELECT 1",
       "joining a query in parentheses is not supported"},
      {"TRANSFORM t FROM w JOIN LATERAL f(w.a) x ON true SELECT 1", "LATERAL is not supported"},
      {"TRANSFORM t FROM w JOIN m ON w.a = (SELECT 1) SELECT 1",
       "an expression or subquery in a JOIN condition"},
      {"TRANSFORM t FROM w JOIN m ON lower(w.a) = m.b SELECT 1",
       "an expression or subquery in a JOIN condition"},
      {"TRANSFORM t FROM w JOIN m ON w.a::int = m.b SELECT 1",
       "an expression or subquery in a JOIN condition"},
      {"TRANSFORM t FROM w JOIN m ON m.a = w.a JOIN k ON k.a = w.a AND k.b = m.b SELECT 1",
       "a joined table is matched to one table before it"},
  };
  for (const auto& c : cases) {
    INFO(c.text);
    auto e = ParseFails(c.text);
    CHECK(e.kind == ParseError::Kind::kUnsupported);
    CHECK_THAT(e.message, Contains(c.says));
  }
}

TEST_CASE("join words are reserved: LEFT after FROM is no alias", "[grammar]") {
  auto s = ParseAs<TransformStmt>(
      "TRANSFORM t FROM w \"left\" JOIN m ON \"left\".a = m.b SELECT 1 AS x");
  CHECK(s.source.alias == "left");
  CHECK(RenderName("left") == "\"left\"");
}

// ------------------------------------------------------ PAUSE, RESUME, DROP

TEST_CASE("PAUSE and RESUME keep the address as raw parts", "[grammar]") {
  CHECK(ParseAs<PauseStmt>("PAUSE TRANSFORM widget_prices").address ==
        std::vector<std::string>{"widget_prices"});
  CHECK(ParseAs<ResumeStmt>("resume transform Widget_Prices.Price;").address ==
        std::vector<std::string>{"widget_prices", "price"});
  CHECK(ParseAs<PauseStmt>(R"(PAUSE TRANSFORM "S"."T"."c d")").address ==
        std::vector<std::string>{"S", "T", "c d"});
}

TEST_CASE("an address reads column-of-transform first, then schema.transform", "[grammar]") {
  CHECK(AddressReadings({"a"}) == std::vector<TransformAddress>{{Name("a"), std::nullopt}});
  CHECK(AddressReadings({"a", "b"}) ==
        std::vector<TransformAddress>{{Name("a"), "b"}, {Name("a", "b"), std::nullopt}});
  CHECK(AddressReadings({"a", "b", "c"}) == std::vector<TransformAddress>{{Name("a", "b"), "c"}});
  CHECK(AddressReadings({}).empty());
}

TEST_CASE("an address of more than three parts is refused", "[grammar]") {
  auto e = ParseFails("PAUSE TRANSFORM a.b.c.d");
  CHECK(e.position == 21);
  CHECK_THAT(e.message, Contains("too many dotted parts in the address"));
}

TEST_CASE("PAUSE needs TRANSFORM after it", "[grammar]") {
  auto e = ParseFails("PAUSE widget_prices");
  CHECK(e.position == 6);
  CHECK(e.message == "at position 6: expected TRANSFORM after PAUSE, found \"widget_prices\"");
}

TEST_CASE("DROP TRANSFORM takes an optionally qualified target", "[grammar]") {
  CHECK(ParseAs<DropStmt>("DROP TRANSFORM app.totals").target == Name("app", "totals"));
  auto e = ParseFails("DROP TRANSFORM totals CASCADE");
  CHECK(e.position == 22);
  CHECK(e.message ==
        "at position 22: expected end of statement after the target name, found \"CASCADE\"");
}

// -------------------------------------------------------------------- ALTER

TEST_CASE("ALTER TRANSFORM ADD COLUMN takes an expression and an alias", "[grammar]") {
  auto s =
      ParseAs<AlterAddColumnStmt>("ALTER TRANSFORM t ADD COLUMN CAST(a AS int) * 2 AS doubled");
  CHECK(s.target == Name("t"));
  CHECK(s.column.expr == "CAST(a AS int) * 2");
  CHECK(s.column.alias == "doubled");
  CHECK(s.column.position == 29);
}

TEST_CASE("ALTER TRANSFORM DROP COLUMN takes a column name", "[grammar]") {
  auto s = ParseAs<AlterDropColumnStmt>("ALTER TRANSFORM app.t DROP COLUMN \"Old\"");
  CHECK(s.target == Name("app", "t"));
  CHECK(s.column == "Old");
}

TEST_CASE("ALTER TRANSFORM ALTER COLUMN takes a column and its new expression", "[grammar]") {
  auto s = ParseAs<AlterColumnStmt>("ALTER TRANSFORM t ALTER COLUMN price AS round(p, 2);");
  CHECK(s.column.alias == "price");
  CHECK(s.column.expr == "round(p, 2)");
  CHECK(s.column.position == 40);
}

TEST_CASE("ALTER TRANSFORM errors name the expected words", "[grammar]") {
  auto action = ParseFails("ALTER TRANSFORM t RENAME COLUMN a TO b");
  CHECK(action.position == 18);
  CHECK(action.message ==
        "at position 18: expected ADD COLUMN, DROP COLUMN or ALTER COLUMN after the target name, "
        "found \"RENAME\"");

  auto column = ParseFails("ALTER TRANSFORM t DROP price");
  CHECK(column.position == 23);
  CHECK_THAT(column.message, Contains("expected COLUMN after DROP, found \"price\""));

  auto as = ParseFails("ALTER TRANSFORM t ALTER COLUMN price round(p)");
  CHECK(as.position == 37);
  CHECK_THAT(as.message, Contains("expected AS and the new expression after the column name"));

  auto trailing = ParseFails("ALTER TRANSFORM t ALTER COLUMN price AS p, q");
  CHECK(trailing.position == 41);
  CHECK_THAT(trailing.message,
             Contains("expected end of statement after the expression, found \",\""));
}

// ------------------------------------------------------------------- errors

TEST_CASE("an empty statement is refused", "[grammar]") {
  for (std::string_view text : {"", "   \n\t", "-- only a comment", "/* x */ ;"}) {
    auto e = ParseFails(text);
    CHECK(e.position == 0);
    CHECK_THAT(e.message,
               Contains("empty statement: expected TRANSFORM, PAUSE, RESUME, DROP or ALTER"));
  }
}

TEST_CASE("an unknown statement keyword lists the known ones", "[grammar]") {
  auto e = ParseFails("SELEC * FROM t");
  CHECK(e.position == 0);
  CHECK(e.message ==
        "at position 0: expected TRANSFORM, PAUSE, RESUME, DROP or ALTER, found \"SELEC\"");
}

TEST_CASE("a misspelt FROM is reported where it is", "[grammar]") {
  auto e = ParseFails("TRANSFORM widgets FORM s SELECT a AS a");
  CHECK(e.position == 18);
  CHECK(e.message == "at position 18: expected FROM after the target name, found \"FORM\"");
}

TEST_CASE("a missing source table is reported", "[grammar]") {
  auto e = ParseFails("TRANSFORM t FROM SELECT a AS a");
  CHECK(e.position == 17);
  CHECK(e.message ==
        "at position 17: expected the source table name after FROM, found \"SELECT\" (a reserved "
        "word: write it in double quotes to use it as a name)");
}

TEST_CASE("a table name with three parts is refused", "[grammar]") {
  auto e = ParseFails("TRANSFORM db.app.t FROM s SELECT a AS a");
  CHECK(e.position == 16);
  CHECK_THAT(e.message, Contains("too many dotted parts in the table name"));
}

TEST_CASE("names longer than 63 bytes are refused, 63 are accepted", "[grammar]") {
  const std::string ok(63, 'n');
  CHECK(ParseAs<DropStmt>("DROP TRANSFORM " + ok).target == Name(ok));
  auto e = ParseFails("DROP TRANSFORM \"" + std::string(64, 'n') + "\"");
  CHECK(e.position == 15);
  CHECK_THAT(e.message, Contains("is longer than PostgreSQL's limit of 63 bytes"));
}

TEST_CASE("unterminated literals, identifiers and comments are reported at their start",
          "[grammar]") {
  struct Case {
    std::string_view text;
    std::size_t position;
    std::string_view words;
  };
  const Case cases[] = {
      {"TRANSFORM t FROM s SELECT 'abc AS a", 26, "unterminated string literal"},
      {"TRANSFORM t FROM s SELECT E'abc\\' AS a", 26, "unterminated string literal"},
      {"TRANSFORM \"t FROM s SELECT a AS a", 10, "unterminated quoted identifier"},
      {"TRANSFORM t FROM s SELECT a AS a /* x /* y */", 33, "unterminated /* comment"},
      {"TRANSFORM t FROM s SELECT $q$ abc $$ AS a", 26, "unterminated dollar-quoted string $q$"},
  };
  for (const Case& c : cases) {
    auto e = ParseFails(c.text);
    CHECK(e.position == c.position);
    CHECK_THAT(e.message, Contains(std::string(c.words)));
  }
}

TEST_CASE("a zero-length quoted identifier is refused", "[grammar]") {
  auto e = ParseFails("DROP TRANSFORM \"\"");
  CHECK(e.position == 15);
  CHECK_THAT(e.message, Contains("zero-length quoted identifier"));
}

TEST_CASE("a lexical error after an earlier mistake does not hide it", "[grammar]") {
  auto e = ParseFails("TRANSFORM t FORM s SELECT 'abc");
  CHECK(e.position == 12);
  CHECK_THAT(e.message, Contains("expected FROM"));
}

TEST_CASE("unbalanced brackets are reported at the offending bracket", "[grammar]") {
  auto unclosed = ParseFails("TRANSFORM t FROM s SELECT (a + b AS c");
  CHECK(unclosed.position == 26);
  CHECK(unclosed.message == "at position 26: unbalanced parentheses: \"(\" is never closed");

  auto unopened = ParseFails("TRANSFORM t FROM s SELECT a + b) AS c");
  CHECK(unopened.position == 31);
  CHECK_THAT(unopened.message, Contains("\")\" has no matching opening bracket"));

  auto mismatched = ParseFails("TRANSFORM t FROM s SELECT f(a] AS c");
  CHECK(mismatched.position == 29);
  CHECK_THAT(mismatched.message, Contains("\"]\" cannot close \"(\" at position 27"));
}

TEST_CASE("a semicolon inside brackets is refused", "[grammar]") {
  auto e = ParseFails("TRANSFORM t FROM s SELECT (1; DROP TABLE y; SELECT 1) AS c");
  CHECK(e.position == 26);
  CHECK_THAT(e.message, Contains("\"(\" is not closed before \";\" at position 28"));
}

TEST_CASE("a select item that is not a bare column needs AS and an alias", "[grammar]") {
  auto e = ParseFails("TRANSFORM t FROM s SELECT price + 1, qty AS q");
  CHECK(e.position == 35);
  CHECK(e.message ==
        "at position 35: expected AS and a column alias after the expression (only a bare "
        "column reference is named without AS), found \",\"");
  CHECK(e.kind == ParseError::Kind::kSyntax);

  auto no_alias = ParseFails("TRANSFORM t FROM s SELECT price AS");
  CHECK(no_alias.position == 34);
  CHECK(no_alias.message ==
        "at position 34: expected a column alias after AS, found end of statement");
}

TEST_CASE("a reserved word as an alias must be quoted", "[grammar]") {
  auto e = ParseFails("TRANSFORM t FROM s SELECT x AS from");
  CHECK(e.position == 31);
  CHECK_THAT(e.message, Contains("found \"from\" (a reserved word: write it in double quotes"));
}

TEST_CASE("duplicate column aliases are refused after folding", "[grammar]") {
  auto e = ParseFails("TRANSFORM t FROM s SELECT a AS x, b AS X");
  CHECK(e.position == 39);
  CHECK(e.message == "at position 39: duplicate column alias \"x\" (first used at position 31)");
  // Quoted names are case-sensitive, so these differ.
  CHECK(ParseAs<TransformStmt>("TRANSFORM t FROM s SELECT a AS x, b AS \"X\"").select.size() == 2);
}

TEST_CASE("an empty SELECT list is refused", "[grammar]") {
  auto at_where = ParseFails("TRANSFORM t FROM s SELECT WHERE a");
  CHECK(at_where.position == 26);
  CHECK(at_where.message ==
        "at position 26: empty SELECT list: expected an expression AS column after SELECT, found "
        "\"WHERE\"");
  auto at_end = ParseFails("TRANSFORM t FROM s SELECT");
  CHECK(at_end.position == 25);
  CHECK_THAT(at_end.message, Contains("empty SELECT list"));
}

TEST_CASE("an empty expression before AS or after a comma is refused", "[grammar]") {
  auto before_as = ParseFails("TRANSFORM t FROM s SELECT AS x");
  CHECK(before_as.position == 26);
  CHECK(before_as.message == "at position 26: expected an expression after SELECT, found \"AS\"");

  auto after_comma = ParseFails("TRANSFORM t FROM s SELECT a AS a,");
  CHECK(after_comma.position == 33);
  CHECK_THAT(after_comma.message,
             Contains("expected an expression after \",\", found end of statement"));
}

TEST_CASE("text after the statement is refused", "[grammar]") {
  auto e = ParseFails("TRANSFORM t FROM s SELECT a AS a b");
  CHECK(e.position == 33);
  CHECK(
      e.message ==
      "at position 33: expected \",\", WHERE, GROUP BY, HAVING, WITHOUT SOURCE INDEX, WITHOUT ROW "
      "SECURITY, GRANT SELECT TO or end of statement after the column alias, found \"b\"");
}

TEST_CASE("a second statement after the semicolon is refused", "[grammar]") {
  auto e = ParseFails("TRANSFORM t FROM s SELECT a AS a; DROP TABLE y");
  CHECK(e.position == 34);
  CHECK(e.message == "at position 34: expected end of statement after \";\", found \"DROP\"");
}

TEST_CASE("WHERE needs a predicate", "[grammar]") {
  auto e = ParseFails("TRANSFORM t FROM s SELECT a AS a WHERE GROUP BY a");
  CHECK(e.position == 39);
  CHECK(e.message == "at position 39: expected a predicate after WHERE, found \"GROUP\"");
}

TEST_CASE("clauses come in order: WHERE after GROUP BY is refused", "[grammar]") {
  auto e = ParseFails("TRANSFORM t FROM s SELECT a AS a GROUP BY a WHERE b");
  CHECK(e.position == 44);
  CHECK(e.message ==
        "at position 44: expected \",\", HAVING, WITHOUT SOURCE INDEX, WITHOUT ROW SECURITY, GRANT "
        "SELECT "
        "TO or end of statement after the GROUP BY expression, found \"WHERE\"");
}

TEST_CASE("a comma at the top of a WHERE predicate is refused", "[grammar]") {
  auto e = ParseFails("TRANSFORM t FROM s SELECT a AS a WHERE b, c");
  CHECK(e.position == 40);
  CHECK_THAT(
      e.message,
      Contains("expected GROUP BY, HAVING, WITHOUT SOURCE INDEX, WITHOUT ROW SECURITY, GRANT "
               "SELECT TO or end of statement after the WHERE predicate, found \",\""));
}

TEST_CASE("GROUP needs BY and WITHOUT needs SOURCE INDEX", "[grammar]") {
  auto group = ParseFails("TRANSFORM t FROM s SELECT a AS a GROUP a");
  CHECK(group.position == 39);
  CHECK(group.message == "at position 39: expected BY after GROUP, found \"a\"");

  auto without = ParseFails("TRANSFORM t FROM s SELECT a AS a WITHOUT SOURCE INDICES");
  CHECK(without.position == 48);
  CHECK(without.message ==
        "at position 48: expected INDEX after WITHOUT SOURCE, found \"INDICES\"");

  auto source = ParseFails("TRANSFORM t FROM s SELECT a AS a WITHOUT INDEX");
  CHECK(source.position == 41);
  CHECK_THAT(source.message, Contains("expected SOURCE or ROW after WITHOUT"));
}

TEST_CASE("WITHOUT ROW SECURITY and GRANT SELECT TO close a TRANSFORM", "[grammar]") {
  auto s = ParseAs<TransformStmt>(
      "TRANSFORM t FROM s SELECT a AS a WHERE b GROUP BY a WITHOUT SOURCE INDEX "
      "without row security grant select to reporting, \"Auditors\", public;");
  CHECK(s.where == "b");
  CHECK(s.without_source_index);
  CHECK(s.without_row_security);
  CHECK(s.readers == std::vector<std::string>{"reporting", "Auditors", "public"});

  auto alone = ParseAs<TransformStmt>("TRANSFORM t FROM s SELECT a GRANT SELECT TO r");
  CHECK_FALSE(alone.without_row_security);
  CHECK(alone.readers == std::vector<std::string>{"r"});
  // GRANT ends an expression (PostgreSQL reserves it); WITHOUT does only
  // before SOURCE or ROW, so a time type's WITHOUT TIME ZONE stays inside.
  auto ended = ParseAs<TransformStmt>(
      "TRANSFORM t FROM s SELECT at::timestamp without time zone AS at WHERE a > 1 "
      "WITHOUT ROW SECURITY");
  CHECK(ended.select[0].expr == "at::timestamp without time zone");
  CHECK(ended.where == "a > 1");
  CHECK(ended.without_row_security);
}

TEST_CASE("GRANT SELECT TO and WITHOUT ROW SECURITY refuse what they cannot hold", "[grammar]") {
  auto twice = ParseFails("TRANSFORM t FROM s SELECT a GRANT SELECT TO r, R");
  CHECK(twice.position == 47);
  CHECK(twice.message == "at position 47: role \"r\" is granted twice (first at position 44)");

  auto insert = ParseFails("TRANSFORM t FROM s SELECT a GRANT INSERT TO r");
  CHECK(insert.position == 34);
  CHECK_THAT(insert.message, Contains("expected SELECT after GRANT (a target is only ever "
                                      "granted SELECT), found \"INSERT\""));

  auto no_role = ParseFails("TRANSFORM t FROM s SELECT a GRANT SELECT TO");
  CHECK_THAT(no_role.message,
             Contains("expected a role name after GRANT SELECT TO, found end of statement"));

  auto security = ParseFails("TRANSFORM t FROM s SELECT a WITHOUT ROW LEVEL SECURITY");
  CHECK_THAT(security.message, Contains("expected SECURITY after WITHOUT ROW, found \"LEVEL\""));

  // The clauses keep their order.
  auto order = ParseFails("TRANSFORM t FROM s SELECT a GRANT SELECT TO r WITHOUT ROW SECURITY");
  CHECK(order.message ==
        "at position 46: expected \",\" or end of statement after the role name, found "
        "\"WITHOUT\"");
  auto index_last =
      ParseFails("TRANSFORM t FROM s SELECT a WITHOUT ROW SECURITY WITHOUT SOURCE INDEX");
  CHECK(index_last.message ==
        "at position 49: expected GRANT SELECT TO or end of statement after WITHOUT ROW "
        "SECURITY, found \"WITHOUT\"");
}

TEST_CASE("a NUL byte is refused wherever it is", "[grammar]") {
  using namespace std::string_literals;
  auto in_name = ParseFails("DROP TRANSFORM \"a\0b\""s);
  CHECK(in_name.position == 17);
  CHECK_THAT(in_name.message, Contains("NUL byte"));
  auto in_comment = ParseFails("DROP TRANSFORM t /* \0 */"s);
  CHECK(in_comment.position == 20);
  CHECK_THAT(in_comment.message, Contains("NUL byte in a comment"));
}

TEST_CASE("errors in multi-line statements give line and character column", "[grammar]") {
  // "ü" is two bytes but one column.
  auto e = ParseFails("TRANSFORM t\nFROM s\nSELECT grün AS x, y AS X");
  CHECK(e.position == 43);
  CHECK(e.message ==
        "at position 43 (line 3, column 24): duplicate column alias \"x\" (first used at "
        "position 35)");
}

TEST_CASE("long tokens are shortened in messages", "[grammar]") {
  auto e = ParseFails("DROP TRANSFORM t '" + std::string(100, 'x') + "'");
  CHECK(e.position == 17);
  CHECK_THAT(e.message, Contains("found \"'" + std::string(39, 'x') + "...\""));
}

TEST_CASE("the examples of spec/grammar.md parse", "[grammar]") {
  CHECK(ParseAs<TransformStmt>(
            "TRANSFORM reports.daily_totals FROM orders o\n"
            "  SELECT date_trunc('day', o.placed_at) AS day, sum(o.amount) AS total\n"
            "  WHERE o.status <> 'cancelled'\n"
            "  GROUP BY date_trunc('day', o.placed_at);")
            .group_by == std::vector<std::string>{"date_trunc('day', o.placed_at)"});
  CHECK(ParseAs<TransformStmt>(
            "TRANSFORM widget_makers FROM widgets w JOIN makers m ON w.maker_id = m.id\n"
            "  SELECT w.name AS widget, m.name AS maker\n"
            "  WITHOUT SOURCE INDEX")
            .without_source_index);
  CHECK(ParseAs<AlterAddColumnStmt>("ALTER TRANSFORM widget_prices ADD COLUMN price * 1.2 AS gross")
            .column.expr == "price * 1.2");
  CHECK(ParseAs<AlterColumnStmt>(
            "ALTER TRANSFORM widget_prices ALTER COLUMN gross AS round(price * 1.2, 2)")
            .column.expr == "round(price * 1.2, 2)");
}

// ------------------------------------------------- column names, aggregates

// A statement the parser refuses: where, and words its message contains.
struct Refusal {
  const char* text;
  std::size_t position;
  const char* says;
};

void CheckRefusals(const std::vector<Refusal>& refusals, ParseError::Kind kind) {
  for (const Refusal& refusal : refusals) {
    INFO(refusal.text);
    auto e = ParseFails(refusal.text);
    CHECK(e.kind == kind);
    CHECK(e.position == refusal.position);
    CHECK_THAT(e.message, Contains(refusal.says));
  }
}

TEST_CASE("a bare column reference is named after its column", "[grammar][aggregate]") {
  auto s = ParseAs<TransformStmt>(
      "TRANSFORM t FROM app.orders SELECT customer_id, orders.id, \"Mixed\", app.orders.Total, "
      "a.b.c.d");
  REQUIRE(s.select.size() == 5);
  CHECK(s.select[0].expr == "customer_id");
  CHECK(s.select[0].alias == "customer_id");
  CHECK(s.select[1].expr == "orders.id");
  CHECK(s.select[1].alias == "id");
  CHECK(s.select[2].alias == "Mixed");
  CHECK(s.select[3].alias == "total");  // folded, as PostgreSQL names it
  CHECK(s.select[4].alias == "d");
  CHECK(s.select[1].position == 48);
  for (const auto& item : s.select) CHECK_FALSE(item.aggregate);
}

TEST_CASE("only column references are named without AS", "[grammar][aggregate]") {
  // A value keyword is not a column: PostgreSQL names `true` "bool".
  auto keyword = ParseFails("TRANSFORM t FROM s SELECT true");
  CHECK(keyword.position == 30);
  CHECK_THAT(keyword.message, Contains("only a bare column reference is named without AS"));
  CHECK_THAT(ParseFails("TRANSFORM t FROM s SELECT count(*)").message,
             Contains("expected AS and a column alias after the expression"));
  CHECK_THAT(ParseFails("TRANSFORM t FROM s SELECT (a)").message,
             Contains("expected AS and a column alias after the expression"));
  CHECK_THAT(ParseFails("TRANSFORM t FROM s SELECT a.b.c.d.e").message,
             Contains("expected AS and a column alias after the expression"));
  CHECK_THAT(ParseFails("TRANSFORM t FROM s SELECT a::int").message,
             Contains("expected AS and a column alias after the expression"));
}

TEST_CASE("names taken from column references are checked like aliases", "[grammar][aggregate]") {
  auto duplicate = ParseFails("TRANSFORM t FROM s SELECT a, s.a");
  CHECK(duplicate.position == 31);
  CHECK(duplicate.message ==
        "at position 31: duplicate column alias \"a\" (first used at position 26)");
  auto mixed = ParseFails("TRANSFORM t FROM s SELECT x AS a, a");
  CHECK(mixed.position == 34);

  const std::string long_name(64, 'c');
  auto too_long = ParseFails("TRANSFORM t FROM s SELECT s." + long_name);
  CHECK(too_long.position == 28);
  CHECK_THAT(too_long.message, Contains("longer than PostgreSQL's limit of 63 bytes"));
}

TEST_CASE("SELECT * is refused as unsupported", "[grammar][aggregate]") {
  for (const char* text : {"TRANSFORM t FROM s SELECT *", "TRANSFORM t FROM s SELECT s.*"}) {
    auto e = ParseFails(text);
    CHECK(e.position == 26);
    CHECK(e.kind == ParseError::Kind::kUnsupported);
    CHECK_THAT(e.message, Contains("SELECT * is not supported: list the columns"));
  }
}

TEST_CASE("aggregate calls are parsed with their argument", "[grammar][aggregate]") {
  auto s = ParseAs<TransformStmt>(
      "TRANSFORM order_totals FROM orders SELECT customer_id, count(*) AS n, count(note) AS "
      "noted, sum(amount) AS total, avg( ALL amount * 2 ) AS mean, min(placed_at) AS first, "
      "MAX(placed_at) AS last, bool_and(paid) AS all_paid, every(paid) AS every_paid, "
      "bool_or(paid) AS any_paid, \"sum\"(amount) AS quoted, pg_catalog.max(amount) AS "
      "qualified, count((a, b)) AS pairs GROUP BY customer_id");
  using F = AggregateFunction;
  const std::vector<std::optional<AggregateCall>> expected = {
      std::nullopt,
      AggregateCall{F::kCount, std::nullopt, false, {}},
      AggregateCall{F::kCount, "note", false, {}},
      AggregateCall{F::kSum, "amount", false, {}},
      AggregateCall{F::kAvg, "amount * 2", false, {}},
      AggregateCall{F::kMin, "placed_at", false, {}},
      AggregateCall{F::kMax, "placed_at", false, {}},
      AggregateCall{F::kBoolAnd, "paid", false, {}},
      AggregateCall{F::kBoolAnd, "paid", false, {}},
      AggregateCall{F::kBoolOr, "paid", false, {}},
      AggregateCall{F::kSum, "amount", false, {}},
      AggregateCall{F::kMax, "amount", false, {}},
      AggregateCall{F::kCount, "(a, b)", false, {}},
  };
  REQUIRE(s.select.size() == expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    INFO(s.select[i].expr);
    CHECK(s.select[i].aggregate == expected[i]);
  }
  CHECK(s.select[4].expr == "avg( ALL amount * 2 )");  // the text is kept as written
  CHECK(s.Groups());
}

TEST_CASE("calls that are not built-in aggregates are plain expressions", "[grammar][aggregate]") {
  auto s = ParseAs<TransformStmt>(
      "TRANSFORM t FROM s SELECT app.sum(x) AS a, coalesce(x, 0) AS b, s.count AS c, count AS d, "
      "\"COUNT\"(x) AS e, lower(max) AS f, x.pg_catalog.max(y) AS g");
  for (const auto& item : s.select) {
    INFO(item.expr);
    CHECK_FALSE(item.aggregate);
  }
  CHECK_FALSE(s.Groups());
}

TEST_CASE("expressions over aggregates keep each call and its span", "[grammar][aggregate]") {
  auto s = ParseAs<TransformStmt>(
      "TRANSFORM r FROM orders o SELECT o.region, sum(o.amount) / nullif(count(*), 0) AS mean, "
      "100 * pg_catalog.sum(o.paid) AS cents, coalesce(max(o.amount), 0) AS top, "
      "'sum(x)' || \"count\"(o.id)::text AS label, sum(o.amount) AS total "
      "GROUP BY o.region");
  using F = AggregateFunction;
  REQUIRE(s.select.size() == 6);
  CHECK(s.select[0].aggregate_uses.empty());
  CHECK_FALSE(s.select[0].ComputesOverAggregates());

  const auto& mean = s.select[1];
  CHECK_FALSE(mean.aggregate);
  CHECK(mean.ComputesOverAggregates());
  REQUIRE(mean.aggregate_uses.size() == 2);
  CHECK(mean.aggregate_uses[0].call == AggregateCall{F::kSum, "o.amount", false, {}});
  CHECK(mean.aggregate_uses[1].call == AggregateCall{F::kCount, std::nullopt, false, {}});
  auto text = [](const SelectItem& item, std::size_t i) {
    const auto& use = item.aggregate_uses[i];
    return item.expr.substr(use.begin, use.end - use.begin);
  };
  CHECK(text(mean, 0) == "sum(o.amount)");
  CHECK(text(mean, 1) == "count(*)");
  // A qualified call's span starts at its qualifier.
  REQUIRE(s.select[2].aggregate_uses.size() == 1);
  CHECK(text(s.select[2], 0) == "pg_catalog.sum(o.paid)");
  CHECK(text(s.select[3], 0) == "max(o.amount)");
  // A string that reads like a call is not one; a quoted name is.
  REQUIRE(s.select[4].aggregate_uses.size() == 1);
  CHECK(text(s.select[4], 0) == "\"count\"(o.id)");
  // One call alone is still an aggregate column, with its one use.
  CHECK(s.select[5].aggregate == AggregateCall{F::kSum, "o.amount", false, {}});
  REQUIRE(s.select[5].aggregate_uses.size() == 1);
  CHECK(text(s.select[5], 0) == "sum(o.amount)");
  CHECK_FALSE(s.select[5].ComputesOverAggregates());
  CHECK(s.Groups());
  CHECK(s.CompilesToStages());
  CHECK_FALSE(s.having);
}

TEST_CASE("HAVING keeps its condition and its aggregate calls", "[grammar][aggregate]") {
  auto s = ParseAs<TransformStmt>(
      "TRANSFORM t FROM s SELECT g, count(*) AS n WHERE x > 0 GROUP BY g "
      "HAVING count(*) > 1 AND min(x) < 10 GRANT SELECT TO r");
  REQUIRE(s.having);
  CHECK(*s.having == "count(*) > 1 AND min(x) < 10");
  REQUIRE(s.having_uses.size() == 2);
  CHECK(s.having_uses[0].call == AggregateCall{AggregateFunction::kCount, std::nullopt, false, {}});
  CHECK(s.having->substr(s.having_uses[1].begin, s.having_uses[1].end - s.having_uses[1].begin) ==
        "min(x)");
  CHECK(s.readers == std::vector<std::string>{"r"});
  CHECK(s.CompilesToStages());
  // Without GROUP BY, over the whole table.
  auto whole = ParseAs<TransformStmt>("TRANSFORM t FROM s SELECT sum(a) AS a HAVING count(*) > 0");
  CHECK(whole.having == std::optional<std::string>("count(*) > 0"));
  CHECK(whole.group_by.empty());
  // A plain GROUP BY is not compiled.
  CHECK_FALSE(ParseAs<TransformStmt>("TRANSFORM t FROM s SELECT g, sum(a) AS a GROUP BY g")
                  .CompilesToStages());
}

TEST_CASE("HAVING and expressions over aggregates render as written", "[grammar][aggregate]") {
  const std::string text =
      "TRANSFORM t FROM s SELECT g AS g, sum(a) / nullif(count(*), 0) AS r WHERE a > 0 "
      "GROUP BY g HAVING count(*) > 5";
  auto s = ParseAs<TransformStmt>(text);
  CHECK(Render(s) == text);
  CHECK(ParseAs<TransformStmt>(Render(s)) == s);
}

TEST_CASE("aggregates in HAVING and SELECT refuse what they refuse alone", "[grammar][aggregate]") {
  CheckRefusals(
      {
          {"TRANSFORM t FROM s SELECT g, count(*) AS n GROUP BY g HAVING sum(count(*)) > 1", 65,
           "an aggregate of an aggregate is not supported"},
          {"TRANSFORM t FROM s SELECT 1 + sum(max(x)) AS n", 34,
           "an aggregate of an aggregate is not supported"},
          {"TRANSFORM t FROM s SELECT g, count(*) AS n GROUP BY g HAVING count(*) OVER () > 1", 70,
           "window functions (OVER) are not supported"},
          {"TRANSFORM t FROM s SELECT g, count(*) AS n GROUP BY g HAVING min(DISTINCT x) > 1", 65,
           "min(DISTINCT ...) is not supported: DISTINCT does not change min's result"},
          {"TRANSFORM t FROM s SELECT DISTINCT g HAVING g > 1", 26,
           "SELECT DISTINCT with HAVING is not supported"},
          {"TRANSFORM t FROM s SELECT DISTINCT 1 + count(*) AS n", 26,
           "SELECT DISTINCT with aggregates is not supported"},
          {"ALTER TRANSFORM t ADD COLUMN sum(x) / count(*) AS r", 29,
           "ALTER TRANSFORM cannot add or change a column computed over aggregates"},
          {"ALTER TRANSFORM t ALTER COLUMN r AS coalesce(sum(x), 0)", 36,
           "DROP TRANSFORM and define it again with the column"},
      },
      ParseError::Kind::kUnsupported);
  auto where =
      ParseFails("TRANSFORM t FROM s SELECT g, count(*) AS n WHERE count(*) > 1 GROUP BY g");
  CHECK(where.position == 49);
  CHECK_THAT(where.message, Contains("aggregate functions are not allowed in WHERE"));
  CHECK_THAT(where.message, Contains("write the condition in HAVING"));
  auto group = ParseFails("TRANSFORM t FROM s SELECT count(*) AS n GROUP BY sum(x)");
  CHECK_THAT(group.message, Contains("aggregate functions are not allowed in GROUP BY"));
  // HAVING comes after GROUP BY.
  auto order =
      ParseFails("TRANSFORM t FROM s SELECT g, count(*) AS n HAVING count(*) > 1 GROUP BY g");
  CHECK_THAT(order.message, Contains("after the HAVING condition, found \"GROUP\""));
}

TEST_CASE("aggregate forms Trellis does not maintain are refused by name", "[grammar][aggregate]") {
  CheckRefusals(
      {
          {"TRANSFORM t FROM s SELECT count(*) FILTER (WHERE paid) AS n", 35,
           "FILTER on an aggregate is not supported: move the condition into the argument"},
          {"TRANSFORM t FROM s SELECT sum(x) OVER (PARTITION BY g) AS n", 33,
           "window functions (OVER) are not supported"},
          {"TRANSFORM t FROM s SELECT row_number() OVER () AS n", 39,
           "window functions (OVER) are not supported"},
          {"TRANSFORM t FROM s SELECT max(DISTINCT x) AS n", 30,
           "max(DISTINCT ...) is not supported: DISTINCT does not change max's result"},
          {"TRANSFORM t FROM s SELECT sum(count(*)) AS n", 30,
           "an aggregate of an aggregate is not supported"},
          {"TRANSFORM t FROM s SELECT max(x ORDER BY y) AS n", 32,
           "ORDER BY inside max(...) is not supported"},
          {"TRANSFORM t FROM s SELECT a WHERE b ORDER BY a", 36,
           "ORDER BY is not supported: a target is a table"},
          {"TRANSFORM t FROM s SELECT a LIMIT 10", 28, "LIMIT and OFFSET are not supported"},
          {"TRANSFORM t FROM s SELECT a GROUP BY a OFFSET 1", 39,
           "LIMIT and OFFSET are not supported"},
          {"TRANSFORM t FROM s SELECT a UNION SELECT b", 28, "UNION (without ALL"},
          {"TRANSFORM t FROM s SELECT a WINDOW w AS (ORDER BY a)", 28, "WINDOW is not supported"},
          {"TRANSFORM t FROM s SELECT DISTINCT ON (a) a, b", 26,
           "SELECT DISTINCT ON without ORDER BY is not supported"},
          {"TRANSFORM t FROM s SELECT DISTINCT a GROUP BY a", 26,
           "SELECT DISTINCT with GROUP BY is not supported"},
          {"TRANSFORM t FROM s SELECT DISTINCT count(*) AS n", 26,
           "SELECT DISTINCT with aggregates is not supported"},
          {"TRANSFORM t FROM s SELECT a, count(*) AS n GROUP BY 1", 52,
           "GROUP BY 1 (a position in the SELECT list) is not supported"},
          {"TRANSFORM t FROM s SELECT a, count(*) AS n GROUP BY ROLLUP (a)", 52,
           "ROLLUP, CUBE and GROUPING SETS are not supported"},
          {"TRANSFORM t FROM s SELECT a, count(*) AS n GROUP BY a, cube(a)", 55,
           "ROLLUP, CUBE and GROUPING SETS are not supported"},
          {"TRANSFORM t FROM s SELECT a, count(*) AS n GROUP BY GROUPING SETS ((a))", 52,
           "ROLLUP, CUBE and GROUPING SETS are not supported"},
          {"TRANSFORM t FROM s SELECT count(*) AS n GROUP BY ()", 49,
           "GROUP BY () is not supported"},
          {"TRANSFORM t FROM s SELECT a GROUP BY DISTINCT a", 37,
           "GROUP BY ALL and GROUP BY DISTINCT"},
      },
      ParseError::Kind::kUnsupported);
}

TEST_CASE("malformed aggregate calls are syntax errors", "[grammar][aggregate]") {
  CheckRefusals(
      {
          {"TRANSFORM t FROM s SELECT count() AS n", 31,
           "count needs an argument: count(*) or count(expression)"},
          {"TRANSFORM t FROM s SELECT sum() AS n", 29, "sum needs one argument: sum(expression)"},
          {"TRANSFORM t FROM s SELECT sum(a, b) AS n", 31,
           "sum takes one argument, found a second"},
          {"TRANSFORM t FROM s SELECT avg(*) AS n", 30,
           "only count takes *: write avg(expression)"},
          {"TRANSFORM t FROM s SELECT a WHERE count(*) > 1", 34,
           "aggregate functions are not allowed in WHERE: WHERE picks source rows before they are "
           "grouped"},
          {"TRANSFORM t FROM s SELECT a WHERE rank() OVER () = 1", 34,
           "window functions are not allowed in WHERE"},
          {"TRANSFORM t FROM s SELECT count(*) AS n GROUP BY max(a)", 49,
           "aggregate functions are not allowed in GROUP BY"},
      },
      ParseError::Kind::kSyntax);
}

TEST_CASE("SELECT DISTINCT sets distinct; SELECT ALL is the default", "[grammar][aggregate]") {
  auto s = ParseAs<TransformStmt>("TRANSFORM t FROM s SELECT DISTINCT a, b AS c WHERE d");
  CHECK(s.distinct);
  CHECK(s.Groups());
  REQUIRE(s.select.size() == 2);
  CHECK(s.select[0].alias == "a");
  auto all = ParseAs<TransformStmt>("TRANSFORM t FROM s SELECT ALL a");
  CHECK_FALSE(all.distinct);
  CHECK_FALSE(all.Groups());
  CHECK_THAT(ParseFails("TRANSFORM t FROM s SELECT DISTINCT WHERE a").message,
             Contains("empty SELECT list"));
  // `IS DISTINCT FROM` inside an expression is not SELECT DISTINCT.
  CHECK_FALSE(
      ParseAs<TransformStmt>("TRANSFORM t FROM s SELECT a IS DISTINCT FROM b AS c").distinct);
}

TEST_CASE("GROUP BY without aggregates and aggregates without GROUP BY group",
          "[grammar][aggregate]") {
  CHECK(ParseAs<TransformStmt>("TRANSFORM t FROM s SELECT a GROUP BY a").Groups());
  auto whole = ParseAs<TransformStmt>("TRANSFORM t FROM s SELECT count(*) AS n, max(a) AS m");
  CHECK(whole.group_by.empty());
  CHECK(whole.Groups());
}

TEST_CASE("ALTER ADD COLUMN and ALTER COLUMN read aggregates and column names",
          "[grammar][aggregate]") {
  auto add = ParseAs<AlterAddColumnStmt>("ALTER TRANSFORM totals ADD COLUMN o.amount");
  CHECK(add.column.alias == "amount");
  auto add_sum = ParseAs<AlterAddColumnStmt>("ALTER TRANSFORM totals ADD COLUMN sum(x) AS s");
  CHECK(add_sum.column.aggregate == AggregateCall{AggregateFunction::kSum, "x", false, {}});
  auto alter = ParseAs<AlterColumnStmt>("ALTER TRANSFORM totals ALTER COLUMN s AS max(y)");
  CHECK(alter.column.aggregate == AggregateCall{AggregateFunction::kMax, "y", false, {}});
  CHECK(ParseFails("ALTER TRANSFORM totals ALTER COLUMN s AS sum(y) FILTER (WHERE z)").kind ==
        ParseError::Kind::kUnsupported);
}

TEST_CASE("the example of issue 11 parses", "[grammar][aggregate]") {
  auto s = ParseAs<TransformStmt>(
      "TRANSFORM order_totals FROM orders SELECT customer_id, count(*) AS n, sum(amount) AS "
      "total, avg(amount) AS mean, min(placed_at) AS first, max(placed_at) AS last GROUP BY "
      "customer_id");
  CHECK(s.group_by == std::vector<std::string>{"customer_id"});
  CHECK(Render(s) ==
        "TRANSFORM order_totals FROM orders SELECT customer_id AS customer_id, count(*) AS n, "
        "sum(amount) AS total, avg(amount) AS mean, min(placed_at) AS first, max(placed_at) AS "
        "last GROUP BY customer_id");
}

// ----------------------------------------------------------------- security

TEST_CASE("hostile quoted names stay single identifiers", "[grammar][security]") {
  auto s = ParseAs<TransformStmt>(
      R"(TRANSFORM "x""; DROP TABLE y; --" FROM "s""); --" SELECT a AS "b"" AS c; --")");
  CHECK(s.target == Name("x\"; DROP TABLE y; --"));
  CHECK(s.source.table == Name("s\"); --"));
  CHECK(s.select[0].alias == "b\" AS c; --");
  CHECK(QuoteQualified(s.target) == R"("x""; DROP TABLE y; --")");
  CHECK(QuoteIdent(s.select[0].alias) == R"("b"" AS c; --")");
  CHECK(Parse(Render(s)) == std::variant<Statement, ParseError>(Statement(s)));
}

TEST_CASE("a statement cannot smuggle a second one through an expression", "[grammar][security]") {
  auto top_level = ParseFails("TRANSFORM t FROM s SELECT 1 AS a; DROP TABLE users; --");
  CHECK(top_level.position == 34);
  CHECK_THAT(top_level.message, Contains("expected end of statement after \";\""));

  auto in_where = ParseFails("TRANSFORM t FROM s SELECT 1 AS a WHERE true); DROP TABLE users; --");
  CHECK(in_where.position == 43);
  CHECK_THAT(in_where.message, Contains("unbalanced parentheses"));
}

// ------------------------------------------------------------ quote, render

TEST_CASE("QuoteIdent always quotes and doubles embedded quotes", "[grammar][quote]") {
  CHECK(QuoteIdent("price") == "\"price\"");
  CHECK(QuoteIdent("Mixed Case") == "\"Mixed Case\"");
  CHECK(QuoteIdent("a\"b") == "\"a\"\"b\"");
  CHECK(QuoteIdent("\"") == "\"\"\"\"");
  CHECK(QuoteIdent("größe") == "\"größe\"");
  CHECK(QuoteIdent("") == "\"\"");
}

TEST_CASE("QuoteQualified quotes each part", "[grammar][quote]") {
  CHECK(QuoteQualified(Name("t")) == "\"t\"");
  CHECK(QuoteQualified(Name("app", "Wid\"gets")) == "\"app\".\"Wid\"\"gets\"");
  CHECK(QuoteQualified(Name("schéma", "日本")) == "\"schéma\".\"日本\"");
}

TEST_CASE("RenderName quotes only what needs quoting", "[grammar][render]") {
  CHECK(RenderName("price") == "price");
  CHECK(RenderName("_a1$") == "_a1$");
  CHECK(RenderName("Price") == "\"Price\"");
  CHECK(RenderName("select") == "\"select\"");
  CHECK(RenderName("source") == "\"source\"");  // unreserved keywords too
  CHECK(RenderName("1st") == "\"1st\"");
  CHECK(RenderName("größe") == "\"größe\"");
  CHECK(RenderName("a b\"c") == "\"a b\"\"c\"");
}

TEST_CASE("Render writes the canonical statement", "[grammar][render]") {
  auto s = ParseAs<TransformStmt>(
      "transform App.\"Totals\" from orders o join \"Regions\" r on r.id = o.region_id "
      "select  r.name  as Region, sum(o.amount) AS \"Total\" where o.paid group by r.name "
      "without source index;");
  CHECK(Render(s) ==
        "TRANSFORM app.\"Totals\" FROM orders AS o JOIN \"Regions\" AS r ON o.region_id = r.id "
        "SELECT r.name AS region, sum(o.amount) AS \"Total\" WHERE o.paid GROUP BY r.name "
        "WITHOUT SOURCE INDEX");
}

TEST_CASE("Parse(Render(x)) == x for every kind of TRANSFORM", "[grammar][render]") {
  const char* statements[] = {
      "TRANSFORM widget_prices FROM widgets SELECT price AS price",
      "TRANSFORM \"Select\".\"from\" FROM \"where\" AS \"Group\" SELECT 1 AS \"as\"",
      "TRANSFORM t FROM widgets w JOIN makers AS m ON m.id = w.maker_id AND w.r = m.r "
      "SELECT m.name AS maker",
      "TRANSFORM t FROM app.widgets JOIN app.makers ON makers.id = widgets.maker_id "
      "SELECT widgets.id AS id",
      "TRANSFORM t FROM o INNER JOIN c ON o.c = c.id LEFT OUTER JOIN r ON c.r = r.id AND r.x = "
      "c.x SELECT r.label WHERE o.a",
      "TRANSFORM t FROM o RIGHT OUTER JOIN c ON o.c = c.id FULL JOIN r ON c.r = r.id JOIN s ON "
      "s.id = r.s SELECT r.label",
      "TRANSFORM t FROM s SELECT a -- note\n + 1 AS x, $$ ; $$ AS y WHERE (b) GROUP BY a, b "
      "WITHOUT SOURCE INDEX",
      "TRANSFORM Größen FROM Maße SELECT Länge AS Länge",
      "TRANSFORM t FROM s AS source SELECT source.index AS index, 1 AS \"source\"",
      "TRANSFORM t FROM s SELECT DISTINCT a, s.b WHERE c",
      "TRANSFORM t FROM orders o SELECT o.customer_id, count(*) AS n, sum(ALL o.amount) AS "
      "total, every(o.paid) AS all_paid GROUP BY o.customer_id",
      "TRANSFORM t FROM s SELECT a AS \"grant\" WITHOUT SOURCE INDEX WITHOUT ROW SECURITY GRANT "
      "SELECT TO reader, \"Big Boss\", \"select\"",
      "TRANSFORM t FROM s SELECT a WHERE b GRANT SELECT TO r",
  };
  for (const char* text : statements) {
    auto first = ParseAs<TransformStmt>(text);
    const std::string rendered = Render(first);
    INFO(rendered);
    CHECK(ParseAs<TransformStmt>(rendered) == first);
    CHECK(Render(ParseAs<TransformStmt>(rendered)) == rendered);
  }
}

}  // namespace
}  // namespace trellis::grammar

// Names the engine reports (define's target, RESUME's addresses, status and
// definitions) parse back to the same transform and column.
namespace trellis::grammar {
namespace {

TEST_CASE("reported names read back through ParseTransformName and the address rule") {
  for (const std::string raw : {"widget_prices", "it's", "Mixed Case", "MixedCase", "größen", "a.b",
                                "select", "x\"y", "1st"}) {
    INFO(raw);
    const std::string shown = RenderTransformName(raw);
    auto parsed = ParseTransformName(shown);
    REQUIRE(std::holds_alternative<QualifiedName>(parsed));
    CHECK(std::get<QualifiedName>(parsed) == QualifiedName{std::nullopt, raw});
    // As a statement's address, with and without a column.
    CHECK(ParseAs<PauseStmt>("PAUSE TRANSFORM " + shown).address == std::vector<std::string>{raw});
    const std::string address = RenderAddress(raw, std::string("Price Col"));
    CHECK(ParseAs<ResumeStmt>("RESUME TRANSFORM " + address).address ==
          std::vector<std::string>{raw, "Price Col"});
  }
  CHECK(RenderTransformName("widget_prices") == "widget_prices");
  CHECK(RenderTransformName("it's") == "\"it's\"");
  CHECK(RenderTransformName("Mixed") == "\"Mixed\"");
  CHECK(RenderAddress("w", std::nullopt) == "w");
  CHECK(RenderAddress("w", std::string("price")) == "w.price");
}

TEST_CASE("ParseTransformName: a schema may qualify the name; anything else is refused") {
  auto qualified = ParseTransformName("app.\"Widget Prices\"");
  REQUIRE(std::holds_alternative<QualifiedName>(qualified));
  CHECK(std::get<QualifiedName>(qualified) == QualifiedName{"app", "Widget Prices"});
  // A plain name folds to lower case, as in a statement.
  CHECK(std::get<QualifiedName>(ParseTransformName("Widget_Prices")) ==
        QualifiedName{std::nullopt, "widget_prices"});
  for (const std::string bad : {"", "   ", "a b", "a.b.c", "\"unterminated", "a;", "w.price;x"}) {
    INFO(bad);
    CHECK(std::holds_alternative<ParseError>(ParseTransformName(bad)));
  }
}

}  // namespace
}  // namespace trellis::grammar
