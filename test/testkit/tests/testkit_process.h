#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "line_reader.h"

namespace trellis::testkit::test {

// The built trellis-testkit binary running as a child of the test, with
// pipes on its stdin and stdout and its stderr kept in memory. Destruction
// stops a testkit that is still running (SIGTERM, then SIGKILL) so a failed
// test leaks no cluster. Thread-safety: not thread-safe.
class TestkitProcess {
 public:
  // Starts the testkit with `args` and extra environment entries
  // ("NAME=value", replacing inherited ones). nullptr if it cannot start.
  static std::unique_ptr<TestkitProcess> Start(const std::vector<std::string>& args = {},
                                               const std::vector<std::string>& env = {});
  ~TestkitProcess();
  TestkitProcess(const TestkitProcess&) = delete;
  TestkitProcess& operator=(const TestkitProcess&) = delete;

  // The next stdout line (the URL); nullopt on EOF or timeout.
  std::optional<std::string> ReadLine(std::chrono::milliseconds timeout);
  // The rest of stdout until the testkit closes it.
  std::string ReadRemainingStdout(std::chrono::milliseconds timeout);

  void CloseStdin();
  void Signal(int signo);

  // Waits for the exit and returns the exit status (128 + signal number if
  // killed by a signal); nullopt on timeout.
  std::optional<int> WaitExit(std::chrono::milliseconds timeout);

  // Everything written to stderr so far.
  std::string Stderr() const;
  pid_t pid() const { return pid_; }

 private:
  TestkitProcess(pid_t pid, int stdin_fd, int stdout_fd, int stderr_fd);

  const pid_t pid_;
  int stdin_fd_;
  const int stdout_fd_;
  const int stderr_fd_;
  LineReader stdout_;
  bool reaped_ = false;
};

}  // namespace trellis::testkit::test
