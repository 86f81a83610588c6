// The key codec against the server (sql/key_text.h): the literal the engine
// writes is the literal PostgreSQL prints for the same values, the server
// reads it back to those values, and the SQL fragments that carry keys
// through pages and key lists give every key back whole.
#include <catch2/catch.hpp>
#include <set>

#include "engine_fixture.h"
#include "sql/key_text.h"
#include "sql/quote.h"

namespace trellis::test {
namespace {

using sql::KeyValueList;

const std::vector<KeyValueList> kAwkwardKeys = {
    {std::string("1")},
    {std::nullopt},
    {std::string("NULL"), std::string("null"), std::nullopt},
    {std::string(""), std::string(" ")},
    {std::string("a b"), std::string(" leading"), std::string("tab\there"),
     std::string("new\nline")},
    {std::string("say \"hi\""), std::string("back\\slash"), std::string("\\")},
    {std::string("a,b"), std::string("{braces}"), std::string("}{")},
    {std::string("zürich"), std::string("日本"), std::string("emoji 🙂")},
    {std::string("\"\\,{}\" NULL"), std::nullopt, std::string("x")},
};

// ARRAY[$1, $2, ...]::text as the server prints it.
std::string ServerLiteral(pg::Connection& conn, const KeyValueList& values) {
  std::vector<std::string> params;
  pg::Params bound;
  for (size_t i = 0; i < values.size(); ++i) {
    params.push_back("$" + std::to_string(i + 1) + "::text");
    bound.push_back(values[i]);
  }
  auto rows =
      conn.Query("SELECT " + sql::KeyLiteralOf("ARRAY[" + sql::Join(params, ", ") + "]"), bound);
  REQUIRE(rows.ok());
  return rows->text(0, 0);
}

}  // namespace

TEST_CASE("the engine's key literal is the server's, and reads back as its values", "[key_text]") {
  EngineFixture f;
  for (const auto& values : kAwkwardKeys) {
    const std::string literal = sql::KeyLiteral(values);
    INFO(literal);
    CHECK(ServerLiteral(f.conn(), values) == literal);
    CHECK(sql::ParseKeyLiteral(ServerLiteral(f.conn(), values)) == values);
    // The server reads the literal back to the same values, in order.
    for (size_t i = 0; i < values.size(); ++i) {
      auto rows = f.conn().Query("SELECT " + sql::KeyElement("$1::text[]", i), {literal});
      REQUIRE(rows.ok());
      CHECK(rows->at(0, 0) == values[i]);
    }
  }
}

TEST_CASE("keys travel whole through a key list and a page's rows", "[key_text]") {
  EngineFixture f;
  std::vector<std::string> three_wide;
  std::vector<std::string> all;
  for (const auto& values : kAwkwardKeys) {
    all.push_back(sql::KeyLiteral(values));
    if (values.size() == 3) three_wide.push_back(sql::KeyLiteral(values));
  }
  REQUIRE(three_wide.size() >= 2);
  // A key list (self-check's candidates), unnested and printed again.
  auto listed = f.conn().Query(
      "SELECT " + sql::KeyLiteralOf("key") + " FROM (" + sql::KeysOfList("$1") + ") x ORDER BY 1",
      {sql::KeyListLiteral(all)});
  REQUIRE(listed.ok());
  std::multiset<std::string> got, want(all.begin(), all.end());
  for (size_t r = 0; r < listed->size(); ++r) got.insert(listed->text(r, 0));
  CHECK(got == want);
  // Keys as a page holds them (a 2-D text[]), read row by row.
  auto paged = f.conn().Query("SELECT " + sql::KeyLiteralOf(sql::KeyOfRow("k", 3)) +
                                  " FROM (SELECT 1 AS id, $1::text[] AS keys) AS p, " +
                                  sql::KeyRows("p.keys", "p.id", 3, "k"),
                              {sql::KeyRowsLiteral(three_wide)});
  REQUIRE(paged.ok());
  got.clear();
  for (size_t r = 0; r < paged->size(); ++r) got.insert(paged->text(r, 0));
  CHECK(got == std::multiset<std::string>(three_wide.begin(), three_wide.end()));
}

TEST_CASE("a key's text form is computed and cast back through its types", "[key_text]") {
  EngineFixture f;
  // Values of other types print by their type's output: the literal the
  // engine would write for those texts.
  CHECK(f.Scalar("SELECT " + sql::KeyLiteralOf(sql::KeyText(
                                 {"1::int", "NULL::int", "'a b'::text", "1.50::numeric"}))) ==
        sql::KeyLiteral({std::string("1"), std::nullopt, std::string("a b"), std::string("1.50")}));
  // Cast back to the types and printed again: numeric keeps its scale, so
  // 1.0 and 1.00 are two texts of one value (why release_key canonicalizes).
  const auto types = std::vector<std::string>{"int", "numeric", "text"};
  auto rows = f.conn().Query(
      "SELECT " + sql::KeyLiteralOf(sql::KeyText(sql::KeyValues("$1::text[]", types))),
      {sql::KeyLiteral({std::string("007"), std::string("1.0"), std::nullopt})});
  REQUIRE(rows.ok());
  CHECK(rows->text(0, 0) == "{7,1.0,NULL}");
}

}  // namespace trellis::test
