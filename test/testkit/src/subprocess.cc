#include "subprocess.h"

#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <thread>

#include "file_tail.h"

namespace trellis::testkit {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

constexpr int kOutputTailLines = 30;
constexpr milliseconds kChildPollInterval{20};
constexpr auto kOrphanReapDeadline = std::chrono::seconds(5);

// The step at which a forked child failed, sent to the parent through a
// close-on-exec pipe: EOF on that pipe means exec succeeded.
enum class ChildStep : int { kRedirect, kChdir, kSwitchUser, kParentDeathSignal, kExec };

struct ChildFailure {
  ChildStep step;
  int error;
};

const char* DescribeStep(ChildStep step) {
  switch (step) {
    case ChildStep::kRedirect:
      return "redirect output";
    case ChildStep::kChdir:
      return "change directory";
    case ChildStep::kSwitchUser:
      return "switch user";
    case ChildStep::kParentDeathSignal:
      return "set the parent-death signal";
    case ChildStep::kExec:
      return "exec";
  }
  return "start";
}

[[noreturn]] void FailChild(int report_fd, ChildStep step) {
  const ChildFailure failure{step, errno};
  [[maybe_unused]] const ssize_t ignored = write(report_fd, &failure, sizeof failure);
  _exit(127);
}

// Runs in the forked child: only async-signal-safe calls from here to exec.
[[noreturn]] void BecomeChild(const SpawnSpec& spec, char* const* argv, int null_fd, int output_fd,
                              int report_fd, pid_t parent) {
  sigset_t empty;
  sigemptyset(&empty);
  sigprocmask(SIG_SETMASK, &empty, nullptr);
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  sigaction(SIGPIPE, &default_action, nullptr);  // we ignore it; exec keeps ignored signals

  if (dup2(null_fd, STDIN_FILENO) < 0 || dup2(output_fd, STDOUT_FILENO) < 0 ||
      dup2(output_fd, STDERR_FILENO) < 0) {
    FailChild(report_fd, ChildStep::kRedirect);
  }
  if (chdir(spec.working_dir.c_str()) != 0) FailChild(report_fd, ChildStep::kChdir);
  if (spec.run_as) {
    const gid_t gid = spec.run_as->gid;
    if (setgroups(1, &gid) != 0 || setgid(gid) != 0 || setuid(spec.run_as->uid) != 0) {
      FailChild(report_fd, ChildStep::kSwitchUser);
    }
  }
  // After the credential switch: the kernel clears the setting on a change of
  // uid, so setting it earlier would silently do nothing.
  if (prctl(PR_SET_PDEATHSIG, spec.parent_death_signal) != 0) {
    FailChild(report_fd, ChildStep::kParentDeathSignal);
  }
  if (getppid() != parent) _exit(127);  // the parent died before prctl took effect
  close_range(STDERR_FILENO + 1, ~0U, CLOSE_RANGE_CLOEXEC);
  execv(argv[0], argv);
  FailChild(report_fd, ChildStep::kExec);
}

// Sends SIGKILL to every process whose parent is `parent`.
void KillChildrenOf(pid_t parent) {
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return;
  while (const dirent* entry = readdir(proc)) {
    const pid_t pid = static_cast<pid_t>(std::atoi(entry->d_name));
    if (pid <= 0) continue;
    // /proc/PID/stat is "pid (comm) state ppid ..."; comm may hold spaces and
    // parentheses, so parse from the last ')'.
    std::ifstream stat_file("/proc/" + std::string(entry->d_name) + "/stat");
    std::string stat;
    std::getline(stat_file, stat);
    const std::size_t close_paren = stat.rfind(')');
    if (close_paren == std::string::npos) continue;
    char state = 0;
    int ppid = 0;
    if (std::sscanf(stat.c_str() + close_paren + 1, " %c %d", &state, &ppid) == 2 &&
        ppid == parent) {
      kill(pid, SIGKILL);
    }
  }
  closedir(proc);
}

}  // namespace

Result<pid_t> Spawn(const SpawnSpec& spec) {
  std::vector<char*> argv;
  for (const std::string& arg : spec.argv) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);

  const int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  const int output_fd =
      open(spec.output_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  int report[2] = {-1, -1};
  if (null_fd < 0 || output_fd < 0 || pipe2(report, O_CLOEXEC) != 0) {
    const std::string message = std::string("cannot prepare to start ") + spec.argv.at(0) +
                                " (output " + spec.output_path + "): " + std::strerror(errno);
    for (int fd : {null_fd, output_fd, report[0], report[1]}) {
      if (fd >= 0) close(fd);
    }
    return Status::Error(message);
  }

  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid == 0) BecomeChild(spec, argv.data(), null_fd, output_fd, report[1], parent);
  const int fork_error = errno;
  close(null_fd);
  close(output_fd);
  close(report[1]);
  if (pid < 0) {
    close(report[0]);
    return Status::Error(std::string("fork: ") + std::strerror(fork_error));
  }

  ChildFailure failure;
  ssize_t got;
  do {
    got = read(report[0], &failure, sizeof failure);
  } while (got < 0 && errno == EINTR);
  close(report[0]);
  if (got != static_cast<ssize_t>(sizeof failure)) return pid;  // EOF: exec succeeded

  waitpid(pid, nullptr, 0);
  std::string message =
      std::string("cannot ") + DescribeStep(failure.step) + " for " + spec.argv.at(0);
  if (failure.step == ChildStep::kSwitchUser) message += " (to user " + spec.run_as->user + ")";
  return Status::Error(message + ": " + std::strerror(failure.error));
}

std::optional<int> TryReap(pid_t pid) {
  int status = 0;
  pid_t got;
  do {
    got = waitpid(pid, &status, WNOHANG);
  } while (got < 0 && errno == EINTR);
  if (got == pid) return status;
  return std::nullopt;
}

std::string DescribeWaitStatus(int wait_status) {
  if (WIFEXITED(wait_status))
    return "exited with status " + std::to_string(WEXITSTATUS(wait_status));
  if (WIFSIGNALED(wait_status)) {
    const char* name = sigabbrev_np(WTERMSIG(wait_status));
    return std::string("was killed by SIG") + (name != nullptr ? name : "?");
  }
  return "stopped with wait status " + std::to_string(wait_status);
}

Status RunToCompletion(const SpawnSpec& spec, const std::string& what, ShutdownWatch& watch) {
  Result<pid_t> started = Spawn(spec);
  if (!started.ok()) return started.status();
  const pid_t pid = started.value();
  for (;;) {
    if (std::optional<int> status = TryReap(pid)) {
      if (WIFEXITED(*status) && WEXITSTATUS(*status) == 0) return Status::Ok();
      return Status::Error(what + " " + DescribeWaitStatus(*status) + "; the end of its output (" +
                           spec.output_path + "):\n" +
                           FileTail(spec.output_path, kOutputTailLines));
    }
    if (watch.WaitForStop(kChildPollInterval)) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
      return Status::Aborted(watch.stop_reason());
    }
  }
}

void KillRemainingChildren() {
  const auto deadline = steady_clock::now() + kOrphanReapDeadline;
  for (;;) {
    pid_t got;
    do {
      got = waitpid(-1, nullptr, WNOHANG);
    } while (got > 0 || (got < 0 && errno == EINTR));
    if (got < 0) return;  // ECHILD: no children left
    if (steady_clock::now() >= deadline) return;
    KillChildrenOf(getpid());
    std::this_thread::sleep_for(kChildPollInterval);
  }
}

}  // namespace trellis::testkit
