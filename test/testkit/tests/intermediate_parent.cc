#include "intermediate_parent.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "line_reader.h"
#include "testkit_process.h"

namespace trellis::testkit::test {
namespace {

// The intermediate's whole life. It never returns into the test framework.
[[noreturn]] void RunIntermediate(int url_fd, std::chrono::milliseconds timeout) {
  std::unique_ptr<TestkitProcess> testkit = TestkitProcess::Start();
  if (!testkit) _exit(1);
  std::optional<std::string> url = testkit->ReadLine(timeout);
  if (!url) _exit(1);
  const std::string line = *url + "\n";
  if (write(url_fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) _exit(1);
  close(url_fd);
  for (;;) pause();
}

}  // namespace

std::optional<IntermediateParent> StartTestkitUnderIntermediate(std::chrono::milliseconds timeout) {
  int url_pipe[2];
  if (pipe2(url_pipe, O_CLOEXEC) != 0) return std::nullopt;
  const pid_t pid = fork();
  if (pid == 0) {
    close(url_pipe[0]);
    RunIntermediate(url_pipe[1], timeout);
  }
  close(url_pipe[1]);
  if (pid < 0) {
    close(url_pipe[0]);
    return std::nullopt;
  }
  LineReader reader(url_pipe[0]);
  std::optional<std::string> url = reader.ReadLine(timeout);
  close(url_pipe[0]);
  if (!url) {
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    return std::nullopt;
  }
  return IntermediateParent{pid, *url};
}

}  // namespace trellis::testkit::test
