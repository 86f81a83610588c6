// FindTextFault: the check every string argument passes before an op sees it.
#include <catch2/catch.hpp>

#include <string>

#include "trellis/protocol/text.h"

namespace trellis::protocol {
namespace {

using namespace std::string_literals;

std::optional<std::size_t> FaultAt(const std::string& text) {
  auto fault = FindTextFault(text);
  if (!fault) return std::nullopt;
  return fault->position;
}

TEST_CASE("clean UTF-8 text has no fault", "[text]") {
  for (const std::string& text : {""s, "b_ok"s, "héllo"s, "名前"s, "\xF0\x9F\x8C\xB3 tree"s,
                                  "\xEF\xBF\xBF"s, "\xF4\x8F\xBF\xBF"s}) {
    INFO(text);
    CHECK_FALSE(FindTextFault(text));
  }
}

TEST_CASE("a NUL byte is a fault at its position", "[text]") {
  auto fault = FindTextFault("b_ok\0junk"s);
  REQUIRE(fault);
  CHECK(fault->position == 4);
  CHECK(fault->what == "a NUL byte");
  CHECK(FaultAt("\0"s) == 0u);
}

TEST_CASE("invalid UTF-8 is a fault at the sequence's first byte", "[text]") {
  CHECK(FaultAt("ab\xFF") == 2u);            // never a lead byte
  CHECK(FaultAt("a\x80") == 1u);             // lone continuation byte
  CHECK(FaultAt("x\xC3") == 1u);             // truncated at the end
  CHECK(FaultAt("x\xC3(") == 1u);            // continuation missing
  CHECK(FaultAt("\xC0\xAF") == 0u);          // overlong '/'
  CHECK(FaultAt("\xE0\x80\xAF") == 0u);      // overlong, three bytes
  CHECK(FaultAt("\xF0\x80\x80\xAF") == 0u);  // overlong, four bytes
  CHECK(FaultAt("ok\xED\xA0\x80") == 2u);    // a UTF-16 surrogate
  CHECK(FaultAt("\xF4\x90\x80\x80") == 0u);  // above U+10FFFF
  CHECK(FaultAt("\xF5\x80\x80\x80") == 0u);  // lead byte past F4
  CHECK(FindTextFault("\xFF")->what == "an invalid UTF-8 sequence");
}

}  // namespace
}  // namespace trellis::protocol
