#include "grammar/keywords.h"

#include <algorithm>
#include <array>

namespace trellis::grammar {
namespace {

constexpr std::array<std::string_view, 9> kReserved = {
    "and", "as", "column", "from", "group", "join", "on", "select", "where",
};

constexpr std::array<std::string_view, 10> kUnreserved = {
    "add", "alter", "by", "drop", "index", "pause", "resume", "source", "transform", "without",
};

bool Contains(const auto& words, std::string_view word) {
  return std::find(words.begin(), words.end(), word) != words.end();
}

}  // namespace

bool IsKeyword(std::string_view word) {
  return Contains(kReserved, word) || Contains(kUnreserved, word);
}

bool IsReservedKeyword(std::string_view word) { return Contains(kReserved, word); }

}  // namespace trellis::grammar
