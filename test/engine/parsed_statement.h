// A TRANSFORM statement parsed for a test (the test fails on a parse error),
// and the parse error of a statement the grammar must refuse.
#pragma once

#include <catch2/catch.hpp>

#include <string>
#include <variant>

#include "grammar/parser.h"

namespace trellis::test {

inline grammar::TransformStmt Parsed(const std::string& text) {
  auto parsed = grammar::Parse(text);
  if (auto* error = std::get_if<grammar::ParseError>(&parsed)) FAIL(error->message);
  return std::get<grammar::TransformStmt>(std::get<grammar::Statement>(parsed));
}

inline grammar::ParseError Refused(const std::string& text) {
  auto parsed = grammar::Parse(text);
  REQUIRE(std::holds_alternative<grammar::ParseError>(parsed));
  return std::get<grammar::ParseError>(parsed);
}

}  // namespace trellis::test
