#include "port_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace trellis::port_test {
namespace {

using std::chrono::steady_clock;

// Pipe ends move above fds 3 and 4 first, so the child's dup2 onto 3 and 4
// never clobbers the other end.
constexpr int kHighFd = 10;

// Writing to a port that exited must fail the test, not kill the test binary.
const bool kSigpipeIgnored = [] {
  signal(SIGPIPE, SIG_IGN);
  return true;
}();

int MoveHigh(int fd) {
  const int high = fcntl(fd, F_DUPFD_CLOEXEC, kHighFd);
  close(fd);
  return high;
}

[[noreturn]] void Die(const std::string& what) {
  throw std::runtime_error(what + ": " + std::strerror(errno));
}

std::vector<char*> Argv(const std::string& exe, const std::vector<std::string>& args) {
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(exe.c_str()));
  for (const auto& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  return argv;
}

int DecodeWaitStatus(int status) {
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

PortProcess::PortProcess(const std::vector<std::string>& args) {
  int in_pipe[2];
  int out_pipe[2];
  if (pipe2(in_pipe, O_CLOEXEC) != 0 || pipe2(out_pipe, O_CLOEXEC) != 0) Die("pipe2");
  for (int* fd : {&in_pipe[0], &in_pipe[1], &out_pipe[0], &out_pipe[1]}) *fd = MoveHigh(*fd);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, in_pipe[0], 3);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 4);
  const std::string exe = TRELLIS_PORT_BINARY;
  auto argv = Argv(exe, args);
  const int spawned = posix_spawn(&pid_, exe.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(in_pipe[0]);
  close(out_pipe[1]);
  if (spawned != 0) {
    errno = spawned;
    Die("posix_spawn " + exe);
  }
  to_port_ = in_pipe[1];
  from_port_ = out_pipe[0];
}

PortProcess::~PortProcess() {
  CloseInput();
  if (from_port_ >= 0) close(from_port_);
  if (!reaped_) {
    kill(pid_, SIGKILL);
    int status = 0;
    waitpid(pid_, &status, 0);
  }
}

void PortProcess::SendRaw(std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = write(to_port_, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) Die("write to the port");
    bytes.remove_prefix(static_cast<size_t>(n));
  }
}

void PortProcess::SendBody(std::string_view body) { SendRaw(protocol::EncodeFrame(body)); }

void PortProcess::Send(const protocol::Message& message) {
  SendBody(protocol::EncodeMessage(message));
}

void PortProcess::Request(uint64_t id, const std::string& op, protocol::Map args,
                          std::optional<uint64_t> timeout_ms) {
  Send(protocol::Request{id, op, std::move(args), timeout_ms});
}

void PortProcess::Cancel(uint64_t id) { Send(protocol::Cancel{id}); }

std::optional<std::string> PortProcess::ReceiveBody(Ms timeout) {
  const auto deadline = steady_clock::now() + timeout;
  char buffer[64 * 1024];
  for (;;) {
    if (auto body = reader_.Next()) return body;
    if (eof_) return std::nullopt;
    const auto left = std::chrono::duration_cast<Ms>(deadline - steady_clock::now()).count();
    if (left <= 0) return std::nullopt;
    pollfd pfd{from_port_, POLLIN, 0};
    const int ready = poll(&pfd, 1, static_cast<int>(left));
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) Die("poll");
    if (ready == 0) continue;
    const ssize_t n = read(from_port_, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      eof_ = true;
      continue;
    }
    reader_.Feed(std::string_view(buffer, static_cast<size_t>(n)));
  }
}

namespace {

bool IsLog(const protocol::Message& message) {
  auto* event = std::get_if<protocol::Event>(&message);
  return event && event->kind == "log";
}

}  // namespace

std::optional<protocol::Message> PortProcess::Receive(Ms timeout) {
  if (!held_.empty()) {
    protocol::Message message = std::move(held_.front());
    held_.pop_front();
    return message;
  }
  return ReceiveUntil(timeout, /*want_log=*/false);
}

std::optional<protocol::Event> PortProcess::ReceiveLog(Ms timeout) {
  if (!logs_.empty()) {
    protocol::Event event = std::move(logs_.front());
    logs_.pop_front();
    return event;
  }
  auto message = ReceiveUntil(timeout, /*want_log=*/true);
  if (!message) return std::nullopt;
  return std::move(std::get<protocol::Event>(*message));
}

std::optional<protocol::Message> PortProcess::ReceiveUntil(Ms timeout, bool want_log) {
  const auto deadline = steady_clock::now() + timeout;
  for (;;) {
    const auto left = std::chrono::duration_cast<Ms>(deadline - steady_clock::now());
    auto body = ReceiveBody(left.count() > 0 ? left : Ms(0));
    if (!body) return std::nullopt;
    auto decoded = protocol::DecodeMessage(*body);
    auto* message = std::get_if<protocol::Message>(&decoded);
    if (!message) {
      // Receive reports an undecodable frame; ReceiveLog looks past it.
      if (want_log) continue;
      return std::nullopt;
    }
    if (IsLog(*message) == want_log) return std::move(*message);
    if (want_log) {
      held_.push_back(std::move(*message));
    } else {
      logs_.push_back(std::move(std::get<protocol::Event>(*message)));
    }
  }
}

std::optional<protocol::Reply> PortProcess::ReceiveReply(Ms timeout) {
  const auto deadline = steady_clock::now() + timeout;
  for (;;) {
    const auto left = std::chrono::duration_cast<Ms>(deadline - steady_clock::now());
    auto message = Receive(left.count() > 0 ? left : Ms(0));
    if (!message) return std::nullopt;
    if (auto* reply = std::get_if<protocol::Reply>(&*message)) return std::move(*reply);
  }
}

std::optional<protocol::Event> PortProcess::ReceiveHello(Ms timeout) {
  auto message = Receive(timeout);
  if (!message) return std::nullopt;
  auto* event = std::get_if<protocol::Event>(&*message);
  if (!event || event->kind != "hello") return std::nullopt;
  return std::move(*event);
}

std::optional<protocol::Reply> PortProcess::Call(uint64_t id, const std::string& op,
                                                 protocol::Map args,
                                                 std::optional<uint64_t> timeout_ms, Ms wait) {
  Request(id, op, std::move(args), timeout_ms);
  return ReceiveReply(wait);
}

bool PortProcess::OutputClosed(Ms timeout) {
  const auto deadline = steady_clock::now() + timeout;
  while (!eof_) {
    const auto left = std::chrono::duration_cast<Ms>(deadline - steady_clock::now());
    if (left.count() <= 0) return false;
    ReceiveBody(left);  // frames before the EOF are discarded
  }
  return true;
}

void PortProcess::CloseInput() {
  if (to_port_ >= 0) close(to_port_);
  to_port_ = -1;
}

std::optional<int> PortProcess::WaitExit(Ms timeout) {
  if (reaped_) return exit_status_;
  const auto deadline = steady_clock::now() + timeout;
  for (;;) {
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      reaped_ = true;
      exit_status_ = DecodeWaitStatus(status);
      return exit_status_;
    }
    if (steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(5ms);
  }
}

bool IsOk(const protocol::Reply& reply) { return reply.ok(); }

const protocol::Value& OkValue(const protocol::Reply& reply) {
  static const protocol::Value kNil;
  return reply.ok() ? std::get<protocol::Value>(reply.result) : kNil;
}

std::string ErrorCode(const protocol::Reply& reply) {
  return reply.ok() ? "" : std::get<protocol::ErrorInfo>(reply.result).code;
}

std::string ErrorMessage(const protocol::Reply& reply) {
  return reply.ok() ? "" : std::get<protocol::ErrorInfo>(reply.result).message;
}

std::string Show(const protocol::Reply& reply) {
  if (reply.ok()) return "ok " + protocol::ToDisplayString(OkValue(reply));
  return "error " + ErrorCode(reply) + ": " + ErrorMessage(reply);
}

ToolRun RunTool(const std::vector<std::string>& args) {
  int out_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) Die("pipe2");
  for (int* fd : {&out_pipe[0], &out_pipe[1]}) *fd = MoveHigh(*fd);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDOUT_FILENO);
  // Tools run without fds 3 and 4, whatever this process has open there
  // (opened first so the close cannot fail).
  for (int fd : {3, 4}) {
    posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addclose(&actions, fd);
  }
  const std::string exe = TRELLIS_PORT_BINARY;
  auto argv = Argv(exe, args);
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, exe.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(out_pipe[1]);
  if (spawned != 0) {
    close(out_pipe[0]);
    errno = spawned;
    Die("posix_spawn " + exe);
  }
  ToolRun run;
  char buffer[4096];
  for (;;) {
    const ssize_t n = read(out_pipe[0], buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    run.out.append(buffer, static_cast<size_t>(n));
  }
  close(out_pipe[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  run.status = DecodeWaitStatus(status);
  return run;
}

bool Eventually(const std::function<bool()>& condition, Ms timeout) {
  const auto deadline = steady_clock::now() + timeout;
  while (steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(Ms(50));
  }
  return condition();
}

}  // namespace trellis::port_test
