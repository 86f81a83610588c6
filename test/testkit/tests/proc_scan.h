#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace trellis::testkit::test {

// True if `pid` is a live process: it exists and is not a zombie (a zombie
// holds no resources; only its parent's wait is missing).
bool IsRunning(pid_t pid);

// Pids of live processes whose command line contains `needle`.
std::vector<pid_t> ProcessesMentioning(const std::string& needle);

}  // namespace trellis::testkit::test
