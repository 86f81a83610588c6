#include "throwaway_cluster.h"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

extern char** environ;

namespace trellis::test {
namespace {

constexpr auto kStartTimeout = std::chrono::minutes(2);

[[noreturn]] void Fail(const std::string& why) {
  std::fprintf(stderr, "throwaway cluster: %s\n", why.c_str());
  std::abort();
}

// The testkit's one stdout line; "" on EOF or timeout.
std::string ReadLine(int fd) {
  std::string line;
  const auto deadline = std::chrono::steady_clock::now() + kStartTimeout;
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd pfd{fd, POLLIN, 0};
    if (poll(&pfd, 1, 100) <= 0) continue;
    char c;
    const ssize_t n = read(fd, &c, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || c == '\n') return line;
    line.push_back(c);
  }
  return "";
}

}  // namespace

ThrowawayCluster::ThrowawayCluster(const std::string& testkit_path,
                                   const std::vector<std::string>& args) {
  // Close-on-exec pipes: a child the test starts later (a port program) must
  // not inherit the testkit's stdin, or the cluster would outlive the test.
  int in_pipe[2];
  int out_pipe[2];
  if (pipe2(in_pipe, O_CLOEXEC) != 0 || pipe2(out_pipe, O_CLOEXEC) != 0) {
    Fail(std::string("pipe2: ") + std::strerror(errno));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in_pipe[0], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDOUT_FILENO);
  std::string exe = testkit_path;
  std::vector<std::string> words = {exe};
  words.insert(words.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  const int spawned = posix_spawn(&pid_, exe.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(in_pipe[0]);
  close(out_pipe[1]);
  stdin_fd_ = in_pipe[1];
  if (spawned != 0) Fail("cannot start " + exe + ": " + std::strerror(spawned));
  url_ = ReadLine(out_pipe[0]);
  close(out_pipe[0]);
  if (url_.empty()) Fail(exe + " printed no URL");
}

ThrowawayCluster::~ThrowawayCluster() {
  if (stdin_fd_ >= 0) close(stdin_fd_);
  if (pid_ > 0) waitpid(pid_, nullptr, 0);
}

std::string ThrowawayCluster::UrlFor(const std::string& database) const {
  auto slash = url_.rfind('/');
  auto query = url_.find('?', slash);
  return url_.substr(0, slash + 1) + database +
         (query == std::string::npos ? "" : url_.substr(query));
}

}  // namespace trellis::test
