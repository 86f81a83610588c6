// Value: integer normalisation, accessors, lookup and display.
#include <cmath>
#include <limits>

#include <catch2/catch.hpp>

#include "trellis/protocol/value.h"

namespace trellis::protocol {
namespace {

TEST_CASE("unsigned values that fit int64 are held as int64", "[value]") {
  CHECK(Value(uint64_t{5}) == Value(5));
  CHECK(std::holds_alternative<int64_t>(Value(uint64_t{5}).storage()));
  const uint64_t max = std::numeric_limits<uint64_t>::max();
  CHECK(std::holds_alternative<uint64_t>(Value(max).storage()));
  CHECK(Value(max).as_uint64() == max);
  CHECK_FALSE(Value(max).as_int64().has_value());
  CHECK(Value(-1).as_int64() == -1);
  CHECK_FALSE(Value(-1).as_uint64().has_value());
  CHECK(Value(7u).as_uint64() == 7u);
  CHECK_FALSE(Value("7").as_int64().has_value());
  CHECK_FALSE(Value(1.0).as_uint64().has_value());
}

TEST_CASE("type predicates tell every family apart", "[value]") {
  CHECK(Value().is_nil());
  CHECK(Value(nullptr).is_nil());
  CHECK(Value(false).is_bool());
  CHECK(Value(3).is_int());
  CHECK(Value(3.0).is_float());
  CHECK(Value("s").is_string());
  CHECK(Value(Binary{"s"}).is_binary());
  CHECK_FALSE(Value(Binary{"s"}).is_string());
  CHECK(Value(Array{}).is_array());
  CHECK(Value(Map{}).is_map());
  CHECK_FALSE(Value(3) == Value(3.0));
}

TEST_CASE("Find returns the first value under a string key", "[value]") {
  Map map;
  map.emplace_back(Value(1), Value("int key"));
  map.emplace_back(Value("a"), Value(1));
  map.emplace_back(Value("a"), Value(2));
  const Value v(map);
  REQUIRE(v.Find("a") != nullptr);
  CHECK(*v.Find("a") == Value(1));
  CHECK(v.Find("b") == nullptr);
  CHECK(v.Find("1") == nullptr);
  CHECK(Value(Array{}).Find("a") == nullptr);
}

TEST_CASE("MakeMap keeps the order given", "[value]") {
  const Map map = MakeMap({{"z", 1}, {"a", "x"}});
  REQUIRE(map.size() == 2);
  CHECK(map[0].first == Value("z"));
  CHECK(map[1].second == Value("x"));
}

TEST_CASE("ToDisplayString renders one readable line", "[value]") {
  const Value v(MakeMap({{"a", 1},
                         {"b", Array{nullptr, true, 1.5, 2.0, Binary{std::string("\x00\xff", 2)}}},
                         {"c", "line\n\"q\"\x01"},
                         {"d", Value(std::numeric_limits<uint64_t>::max())}}));
  CHECK(ToDisplayString(v) ==
        "{\"a\": 1, \"b\": [null, true, 1.5, 2.0, b\"00ff\"], \"c\": \"line\\n\\\"q\\\"\\u0001\", "
        "\"d\": 18446744073709551615}");
  CHECK(ToDisplayString(Value(std::nan(""))) == "NaN");
  CHECK(ToDisplayString(Value(-std::numeric_limits<double>::infinity())) == "-Infinity");
  CHECK(ToDisplayString(Value(1e300)) == "1e+300");
  CHECK(ToDisplayString(Value(Map{})) == "{}");
}

}  // namespace
}  // namespace trellis::protocol
