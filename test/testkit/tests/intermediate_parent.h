#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>

namespace trellis::testkit::test {

// A process standing between the test and a testkit, so that a test can
// kill the testkit's parent and watch the testkit clean up after itself.
struct IntermediateParent {
  pid_t pid;        // the intermediate, a child of the test process
  std::string url;  // the URL its testkit printed
};

// Forks an intermediate that starts a testkit (keeping the write end of the
// testkit's stdin pipe, so only its death closes it), forwards the URL line
// to the test, then sleeps until killed. nullopt if no URL arrives within
// `timeout` (the intermediate is then killed and reaped).
std::optional<IntermediateParent> StartTestkitUnderIntermediate(std::chrono::milliseconds timeout);

}  // namespace trellis::testkit::test
