#include "file_tail.h"

#include <deque>
#include <fstream>

namespace trellis::testkit {

std::string FileTail(const std::string& path, int max_lines) {
  std::ifstream in(path);
  if (!in) return "(" + path + " could not be read)\n";
  std::deque<std::string> lines;
  std::string line;
  while (std::getline(in, line)) {
    lines.push_back(line);
    if (static_cast<int>(lines.size()) > max_lines) lines.pop_front();
  }
  std::string tail;
  for (const std::string& kept : lines) tail += kept + "\n";
  return tail.empty() ? "(" + path + " is empty)\n" : tail;
}

}  // namespace trellis::testkit
