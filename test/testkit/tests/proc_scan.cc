#include "proc_scan.h"

#include <dirent.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>

namespace trellis::testkit::test {

bool IsRunning(pid_t pid) {
  std::ifstream stat_file("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(stat_file, stat)) return false;
  // "pid (comm) state ...": comm may hold ')' so parse from the last one.
  const std::size_t close_paren = stat.rfind(')');
  char state = 0;
  if (close_paren == std::string::npos ||
      std::sscanf(stat.c_str() + close_paren + 1, " %c", &state) != 1) {
    return false;
  }
  return state != 'Z' && state != 'X';
}

std::vector<pid_t> ProcessesMentioning(const std::string& needle) {
  std::vector<pid_t> found;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return found;
  while (const dirent* entry = readdir(proc)) {
    const pid_t pid = static_cast<pid_t>(std::atoi(entry->d_name));
    if (pid <= 0) continue;
    std::ifstream cmdline_file("/proc/" + std::string(entry->d_name) + "/cmdline");
    const std::string cmdline((std::istreambuf_iterator<char>(cmdline_file)),
                              std::istreambuf_iterator<char>());
    if (cmdline.find(needle) != std::string::npos && IsRunning(pid)) found.push_back(pid);
  }
  closedir(proc);
  return found;
}

}  // namespace trellis::testkit::test
