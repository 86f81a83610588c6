// PostgreSQL's text form of a text[], read back: the form every key and
// routed value list travels in between the engine's statements.
#include <catch2/catch.hpp>

#include "sql/quote.h"

namespace trellis::sql {

TEST_CASE("a text[] literal reads back element by element", "[text_array]") {
  CHECK(ParseTextArray("{}").empty());
  CHECK(ParseTextArray("{a,b}") == std::vector<std::string>{"a", "b"});
  CHECK(ParseTextArray(R"({"a,b","c\"d","e\\f"})") ==
        std::vector<std::string>{"a,b", "c\"d", "e\\f"});
}

TEST_CASE("a NULL element is told apart from the text NULL", "[text_array]") {
  // PostgreSQL writes a NULL element unquoted and the text 'NULL' quoted.
  const auto elements = ParseNullableTextArray(R"({NULL,"NULL",x})");
  REQUIRE(elements.size() == 3);
  CHECK_FALSE(elements[0].has_value());
  CHECK(elements[1] == std::optional<std::string>("NULL"));
  CHECK(elements[2] == std::optional<std::string>("x"));
  // The plain reader keeps its old form for both.
  CHECK(ParseTextArray(R"({NULL,"NULL"})") == std::vector<std::string>{"NULL", "NULL"});
}

}  // namespace trellis::sql
