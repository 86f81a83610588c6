// Golden files of the plan room: each statement a plan renders is compared
// with golden/<fixture>/<statement>.sql; TRELLIS_UPDATE_GOLDEN=1 rewrites
// them instead (review the diff). No file may be left over from a
// statement the plan no longer renders.
#pragma once

#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "plan/transform_plan.h"

namespace trellis::test {

inline void CheckGoldenStatements(const std::vector<plan::NamedStatement>& statements,
                                  const std::string& fixture) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(TRELLIS_GOLDEN_DIR) / fixture;
  const bool update = std::getenv("TRELLIS_UPDATE_GOLDEN") != nullptr;
  for (const auto& s : statements) {
    const fs::path file = dir / (s.name + ".sql");
    if (update) {
      fs::create_directories(dir);
      std::ofstream(file) << s.text << "\n";
      continue;
    }
    INFO("statement " << fixture << "/" << s.name << " (regenerate with TRELLIS_UPDATE_GOLDEN=1)");
    REQUIRE(fs::exists(file));
    std::ifstream in(file);
    std::stringstream text;
    text << in.rdbuf();
    CHECK(text.str() == s.text + "\n");
  }
  size_t files = 0;
  for (const auto& entry : fs::directory_iterator(dir)) files += entry.path().extension() == ".sql";
  CHECK(files == statements.size());
}

}  // namespace trellis::test
