// The key codec (sql/key_text.h): a key's literal as PostgreSQL prints its
// text[], read back value by value, and the SQL fragments every reader of
// page keys, held keys, quarantine records and self-check renders a key
// with. key_text_pg_test.cc checks the same literals against the server.
#include "sql/key_text.h"

#include <catch2/catch.hpp>

namespace trellis::sql {
namespace {

// Values that every quoting rule of array_out meets at least once.
const std::vector<KeyValueList> kAwkwardKeys = {
    {std::string("1")},
    {std::nullopt},
    {std::string("NULL")},
    {std::string("null")},
    {std::string("Null"), std::nullopt},
    {std::string("")},
    {std::string("a b")},
    {std::string(" leading"), std::string("trailing\t"), std::string("new\nline")},
    {std::string("say \"hi\"")},
    {std::string("back\\slash"), std::string("\\")},
    {std::string("a,b"), std::string("{braces}"), std::string("}{")},
    {std::string("zürich"), std::string("日本"), std::string("emoji 🙂")},
    {std::string("42"), std::nullopt, std::string("x"), std::string("2026-12-01 00:00:00+00")},
    {std::string("\"\\,{}\" NULL")},
};

}  // namespace

TEST_CASE("a key literal is written as PostgreSQL prints the text[]", "[key_text]") {
  CHECK(KeyLiteral({std::string("1")}) == "{1}");
  CHECK(KeyLiteral({std::string("1"), std::nullopt, std::string("a b")}) == R"({1,NULL,"a b"})");
  // The text NULL is quoted in any case; a NULL value is the bare word.
  CHECK(KeyLiteral({std::string("NULL"), std::string("nUlL"), std::nullopt}) ==
        R"({"NULL","nUlL",NULL})");
  CHECK(KeyLiteral({std::string("")}) == R"({""})");
  CHECK(KeyLiteral({std::string("a\"b"), std::string("c\\d")}) == R"({"a\"b","c\\d"})");
  CHECK(KeyLiteral({std::string("a,b"), std::string("{x}")}) == R"({"a,b","{x}"})");
  CHECK(KeyLiteral({std::string("tab\there")}) == "{\"tab\there\"}");
  // Bytes above ASCII are written as they are, unquoted.
  CHECK(KeyLiteral({std::string("zürich")}) == "{zürich}");
  CHECK(KeyLiteral({std::string("-1.50"), std::string("2026-12-01")}) == "{-1.50,2026-12-01}");
}

TEST_CASE("a key literal reads back value by value", "[key_text]") {
  for (const auto& values : kAwkwardKeys) {
    INFO(KeyLiteral(values));
    CHECK(ParseKeyLiteral(KeyLiteral(values)) == values);
  }
  // As the server prints it: NULL and "NULL" told apart.
  CHECK(ParseKeyLiteral(R"({NULL,"NULL",x,""})") ==
        KeyValueList{std::nullopt, std::string("NULL"), std::string("x"), std::string("")});
}

TEST_CASE("a list of keys keeps each key whole", "[key_text]") {
  std::vector<std::string> literals;
  for (const auto& values : kAwkwardKeys) literals.push_back(KeyLiteral(values));
  const std::vector<std::string> read = ParseKeyList(KeyListLiteral(literals));
  CHECK(read == literals);
  for (size_t i = 0; i < read.size(); ++i) CHECK(ParseKeyLiteral(read[i]) == kAwkwardKeys[i]);
  // One key per row of a 2-D text[].
  CHECK(KeyRowsLiteral({"{1,a}", R"({2,"b c"})"}) == R"({{1,a},{2,"b c"}})");
  CHECK(KeyRowsLiteral({"{1}"}) == "{{1}}");
}

TEST_CASE("the key SQL fragments render one form", "[key_text]") {
  CHECK(KeyText({"a.id", "(a.x + 1)"}) == "ARRAY[a.id::text, (a.x + 1)::text]");
  CHECK(KeyLiteralOf("c.key") == "c.key::text");
  CHECK(KeyBucket("key", 64) == "abs(hashtext(key::text) % 64)");
  CHECK(KeyElement("$1::text[]", 0) == "($1::text[])[1]");
  CHECK(KeyValues("p.key", {"integer", "text"}) ==
        std::vector<std::string>{"(p.key)[1]::integer", "(p.key)[2]::text"});
  CHECK(KeyOfRow("k", 2) == "ARRAY[k.c1, k.c2]");
  CHECK(KeyRowValues("k", {"bigint"}) == std::vector<std::string>{"k.c1::bigint"});
  CHECK(KeysOfList("$1") == "SELECT k::text[] AS key FROM unnest($1::text[]) k");
}

}  // namespace trellis::sql
