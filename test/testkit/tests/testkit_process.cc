#include "testkit_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <thread>

extern char** environ;

namespace trellis::testkit::test {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

constexpr milliseconds kExitPollInterval{20};
constexpr milliseconds kCleanupGrace{20000};

// The inherited environment with `overrides` ("NAME=value") replacing
// entries of the same name.
std::vector<std::string> MergeEnvironment(const std::vector<std::string>& overrides) {
  std::vector<std::string> merged;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string current = *entry;
    const std::string name = current.substr(0, current.find('='));
    bool replaced = false;
    for (const std::string& override_entry : overrides) {
      replaced = replaced || override_entry.substr(0, override_entry.find('=')) == name;
    }
    if (!replaced) merged.push_back(current);
  }
  merged.insert(merged.end(), overrides.begin(), overrides.end());
  return merged;
}

std::vector<char*> CStrings(const std::vector<std::string>& strings) {
  std::vector<char*> pointers;
  for (const std::string& s : strings) pointers.push_back(const_cast<char*>(s.c_str()));
  pointers.push_back(nullptr);
  return pointers;
}

}  // namespace

std::unique_ptr<TestkitProcess> TestkitProcess::Start(const std::vector<std::string>& args,
                                                      const std::vector<std::string>& env) {
  std::vector<std::string> argv = {TRELLIS_TESTKIT_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  const std::vector<std::string> envp = MergeEnvironment(env);
  std::vector<char*> argv_c = CStrings(argv);
  std::vector<char*> envp_c = CStrings(envp);

  // Close-on-exec everywhere, so a second testkit started later does not hold
  // this one's stdin open and hide its EOF.
  int in[2], out[2];
  if (pipe2(in, O_CLOEXEC) != 0) return nullptr;
  if (pipe2(out, O_CLOEXEC) != 0) {
    close(in[0]);
    close(in[1]);
    return nullptr;
  }
  const int err = memfd_create("trellis-testkit-stderr", MFD_CLOEXEC);
  if (err < 0) {
    for (int fd : {in[0], in[1], out[0], out[1]}) close(fd);
    return nullptr;
  }
  const pid_t pid = fork();
  if (pid == 0) {
    if (dup2(in[0], STDIN_FILENO) < 0 || dup2(out[1], STDOUT_FILENO) < 0 ||
        dup2(err, STDERR_FILENO) < 0) {
      _exit(127);
    }
    execve(argv_c[0], argv_c.data(), envp_c.data());
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  if (pid < 0) {
    close(in[1]);
    close(out[0]);
    close(err);
    return nullptr;
  }
  return std::unique_ptr<TestkitProcess>(new TestkitProcess(pid, in[1], out[0], err));
}

TestkitProcess::TestkitProcess(pid_t pid, int stdin_fd, int stdout_fd, int stderr_fd)
    : pid_(pid),
      stdin_fd_(stdin_fd),
      stdout_fd_(stdout_fd),
      stderr_fd_(stderr_fd),
      stdout_(stdout_fd) {}

TestkitProcess::~TestkitProcess() {
  if (!reaped_) {
    Signal(SIGTERM);
    if (!WaitExit(kCleanupGrace)) {
      Signal(SIGKILL);
      WaitExit(kCleanupGrace);
    }
  }
  CloseStdin();
  close(stdout_fd_);
  close(stderr_fd_);
}

std::optional<std::string> TestkitProcess::ReadLine(milliseconds timeout) {
  return stdout_.ReadLine(timeout);
}

std::string TestkitProcess::ReadRemainingStdout(milliseconds timeout) {
  return stdout_.ReadToEof(timeout);
}

void TestkitProcess::CloseStdin() {
  if (stdin_fd_ >= 0) close(stdin_fd_);
  stdin_fd_ = -1;
}

void TestkitProcess::Signal(int signo) {
  if (!reaped_) kill(pid_, signo);
}

std::optional<int> TestkitProcess::WaitExit(milliseconds timeout) {
  const auto deadline = steady_clock::now() + timeout;
  for (;;) {
    int status = 0;
    const pid_t got = waitpid(pid_, &status, WNOHANG);
    if (got == pid_) {
      reaped_ = true;
      return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
    }
    if (got < 0 && errno != EINTR) return std::nullopt;
    if (steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(kExitPollInterval);
  }
}

std::string TestkitProcess::Stderr() const {
  std::string text;
  char chunk[4096];
  off_t offset = 0;
  ssize_t got;
  while ((got = pread(stderr_fd_, chunk, sizeof chunk, offset)) > 0) {
    text.append(chunk, static_cast<std::size_t>(got));
    offset += got;
  }
  return text;
}

}  // namespace trellis::testkit::test
