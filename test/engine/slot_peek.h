// What a test's own pgoutput slot holds: the binary messages of slot `s`
// over publication `p`, peeked (the slot keeps them), as the logical feed
// reads them. For tests on a --logical throwaway cluster.
#pragma once

#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "pg/connection.h"

namespace trellis::test {

// The bytes of a bytea in hex output form (`\x...`).
inline std::string FromHex(const std::string& text) {
  std::string out;
  for (size_t i = 2; i + 1 < text.size(); i += 2) {
    out += static_cast<char>(std::stoi(text.substr(i, 2), nullptr, 16));
  }
  return out;
}

inline std::vector<std::string> PeekSlot(pg::Connection& conn) {
  auto rows = conn.Query(
      "SELECT data FROM pg_logical_slot_peek_binary_changes('s', NULL, NULL, "
      "'proto_version', '1', 'publication_names', 'p')");
  REQUIRE(rows.ok());
  std::vector<std::string> out;
  for (size_t r = 0; r < rows->size(); ++r) out.push_back(FromHex(rows->text(r, 0)));
  return out;
}

}  // namespace trellis::test
