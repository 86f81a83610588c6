// The test-side JSON reader the conformance runner depends on.
#include <catch2/catch.hpp>

#include "json.h"

namespace trellis::testing {
namespace {

TEST_CASE("JSON objects keep member order and nest", "[json]") {
  const Json j = Json::Parse(R"( {"b": [1, -2.5e1, true, false, null], "a": {"x": "y"}} )");
  REQUIRE(j.as_object().size() == 2);
  CHECK(j.as_object()[0].first == "b");
  const auto& items = j.At("b").as_array();
  CHECK(items[1].as_double() == -25.0);
  CHECK(items[2].as_bool());
  CHECK_FALSE(items[3].as_bool());
  CHECK(items[4].is_null());
  CHECK(j.At("a").At("x").as_string() == "y");
  CHECK(j.Find("c") == nullptr);
}

TEST_CASE("JSON string escapes decode to UTF-8", "[json]") {
  CHECK(Json::Parse(R"("a\n\"\\\/\t")").as_string() == "a\n\"\\/\t");
  CHECK(Json::Parse(R"("\u00e9\u2603")").as_string() == "\xc3\xa9\xe2\x98\x83");
  CHECK(Json::Parse(R"("\ud83d\ude00")").as_string() == "\xf0\x9f\x98\x80");
  CHECK(Json::Parse(R"("\u0000")").as_string() == std::string(1, '\0'));
}

TEST_CASE("malformed JSON is refused with its offset", "[json]") {
  CHECK_THROWS_WITH(Json::Parse("{\"a\": }"), "JSON: unexpected character at byte 6");
  CHECK_THROWS_AS(Json::Parse("[1, 2"), JsonError);
  CHECK_THROWS_AS(Json::Parse("\"\\ud83d\""), JsonError);
  CHECK_THROWS_AS(Json::Parse("1 2"), JsonError);
  CHECK_THROWS_AS(Json::Parse("{}").At("x"), JsonError);
}

}  // namespace
}  // namespace trellis::testing
