#pragma once

#include <string>

namespace trellis::testkit {

// Returns the last `max_lines` lines of the file at `path` (a server or tool
// log), or a note saying it could not be read. Used for error reports.
std::string FileTail(const std::string& path, int max_lines);

}  // namespace trellis::testkit
