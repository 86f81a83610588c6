#include "tools/child_port.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

extern char** environ;

namespace trellis::port {
namespace {

using std::chrono::steady_clock;

// Spawned children must see the pipes on exactly fds 3 and 4, so each end
// first moves above them: dup2 onto 3 or 4 must never clobber the other end.
constexpr int kHighFd = 10;
constexpr int kChildIn = 3;
constexpr int kChildOut = 4;

Status Errno(const std::string& what) {
  return Status::Internal(what + ": " + std::strerror(errno));
}

int MoveHigh(int fd) {
  const int high = fcntl(fd, F_DUPFD_CLOEXEC, kHighFd);
  close(fd);
  return high;
}

}  // namespace

Result<std::unique_ptr<ChildPort>> ChildPort::Spawn(const std::string& exe,
                                                    const std::vector<std::string>& args) {
  int in_pipe[2];   // parent writes in_pipe[1], child reads fd 3
  int out_pipe[2];  // child writes fd 4, parent reads out_pipe[0]
  if (pipe2(in_pipe, O_CLOEXEC) != 0) return Errno("pipe");
  if (pipe2(out_pipe, O_CLOEXEC) != 0) {
    close(in_pipe[0]);
    close(in_pipe[1]);
    return Errno("pipe");
  }
  for (int* fd : {&in_pipe[0], &in_pipe[1], &out_pipe[0], &out_pipe[1]}) *fd = MoveHigh(*fd);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, in_pipe[0], kChildIn);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], kChildOut);

  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(exe.c_str()));
  for (const auto& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);

  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, exe.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(in_pipe[0]);
  close(out_pipe[1]);
  if (spawned != 0) {
    close(in_pipe[1]);
    close(out_pipe[0]);
    return Status::Internal("cannot start " + exe + ": " + std::strerror(spawned));
  }
  return std::unique_ptr<ChildPort>(new ChildPort(pid, in_pipe[1], out_pipe[0]));
}

ChildPort::~ChildPort() {
  CloseInput();
  if (from_child_ >= 0) close(from_child_);
  if (!reaped_) {
    kill(pid_, SIGKILL);
    int status = 0;
    waitpid(pid_, &status, 0);
  }
}

Status ChildPort::Send(std::string_view body) {
  if (to_child_ < 0) return Status::Connection("the port's input is closed");
  const std::string frame = protocol::EncodeFrame(body);
  size_t done = 0;
  while (done < frame.size()) {
    const ssize_t n = write(to_child_, frame.data() + done, frame.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0)
      return Status::Connection(std::string("writing to the port: ") + std::strerror(errno));
    done += static_cast<size_t>(n);
  }
  return Status::OK();
}

Result<std::string> ChildPort::Receive(steady_clock::time_point deadline) {
  char buffer[64 * 1024];
  for (;;) {
    if (auto body = reader_.Next()) return std::move(*body);
    if (reader_.framing_lost()) return Status::Protocol("the port sent an oversized frame");
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - steady_clock::now());
    if (left.count() <= 0) return Status::Timeout("no frame from the port in time");
    pollfd pfd{from_child_, POLLIN, 0};
    const int ready = poll(&pfd, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) return Status::Internal(std::string("poll: ") + std::strerror(errno));
    if (ready == 0) continue;
    const ssize_t n = read(from_child_, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::Connection(std::string("reading the port: ") + std::strerror(errno));
    if (n == 0) return Status::Connection("the port closed its output (it exited)");
    reader_.Feed(std::string_view(buffer, static_cast<size_t>(n)));
  }
}

void ChildPort::CloseInput() {
  if (to_child_ >= 0) close(to_child_);
  to_child_ = -1;
}

std::optional<int> ChildPort::Wait(steady_clock::time_point deadline) {
  if (reaped_) return exit_status_;
  for (;;) {
    int status = 0;
    const pid_t done = waitpid(pid_, &status, WNOHANG);
    if (done == pid_) {
      reaped_ = true;
      exit_status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      return exit_status_;
    }
    if (steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

Result<std::string> SelfExecutable() {
  char path[4096];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  if (n < 0) return Errno("readlink /proc/self/exe");
  return std::string(path, static_cast<size_t>(n));
}

}  // namespace trellis::port
