#include "executables.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>

namespace trellis::testkit {
namespace {

constexpr const char* kDefaultPgBinDir = "/usr/lib/postgresql/15/bin";

bool IsExecutableFile(const std::filesystem::path& path) {
  std::error_code ec;
  return std::filesystem::is_regular_file(path, ec) && access(path.c_str(), X_OK) == 0;
}

bool HasServerBinaries(const std::filesystem::path& dir) {
  return IsExecutableFile(dir / "initdb") && IsExecutableFile(dir / "postgres");
}

// Runs `pg_config --bindir`; empty when pg_config is missing or fails.
std::string PgConfigBinDir() {
  FILE* pipe = popen("pg_config --bindir 2>/dev/null", "r");
  if (pipe == nullptr) return {};
  std::string output;
  char buffer[512];
  while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) output += buffer;
  if (pclose(pipe) != 0) return {};
  while (!output.empty() && (output.back() == '\n' || output.back() == '\r')) output.pop_back();
  return output;
}

}  // namespace

Result<std::string> FindPgBinDir() {
  if (const char* override_dir = std::getenv("TRELLIS_PG_BIN"); override_dir != nullptr) {
    if (HasServerBinaries(override_dir)) return std::string(override_dir);
    return Status::Error(std::string("TRELLIS_PG_BIN=") + override_dir +
                         " does not hold executable initdb and postgres binaries");
  }
  if (HasServerBinaries(kDefaultPgBinDir)) return std::string(kDefaultPgBinDir);
  const std::string from_pg_config = PgConfigBinDir();
  if (!from_pg_config.empty() && HasServerBinaries(from_pg_config)) return from_pg_config;
  return Status::Error(std::string("no PostgreSQL server binaries (initdb, postgres) in ") +
                       kDefaultPgBinDir +
                       " or `pg_config --bindir`; set TRELLIS_PG_BIN to their directory");
}

Result<std::string> FindOnPath(const std::string& name) {
  const char* path_env = std::getenv("PATH");
  std::istringstream dirs(path_env != nullptr ? path_env : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (dir.empty()) continue;
    const std::filesystem::path candidate = std::filesystem::path(dir) / name;
    if (candidate.is_absolute() && IsExecutableFile(candidate)) return candidate.string();
  }
  return Status::Error("no '" + name + "' executable on $PATH");
}

}  // namespace trellis::testkit
