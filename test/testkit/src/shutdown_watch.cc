#include "shutdown_watch.h"

#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace trellis::testkit {
namespace {

sigset_t WatchedSignals() {
  sigset_t set;
  sigemptyset(&set);
  for (int signo : {SIGTERM, SIGINT, SIGHUP, SIGCHLD, SIGUSR1, SIGUSR2}) sigaddset(&set, signo);
  return set;
}

}  // namespace

Result<std::unique_ptr<ShutdownWatch>> ShutdownWatch::Create() {
  const sigset_t set = WatchedSignals();
  if (sigprocmask(SIG_BLOCK, &set, nullptr) != 0) {
    return Status::Error(std::string("sigprocmask: ") + std::strerror(errno));
  }
  const int fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
  if (fd < 0) return Status::Error(std::string("signalfd: ") + std::strerror(errno));
  // The parent's death arrives as a (blocked, so queued) SIGTERM, and
  // WaitForStop also notices getppid() changing. A parent that died before
  // this call is seen by neither; stdin EOF still stops us in that case when
  // stdin is a pipe from that parent, which is how callers should start us.
  const pid_t parent = getppid();
  if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0) {
    const int error = errno;
    close(fd);
    return Status::Error(std::string("prctl(PR_SET_PDEATHSIG): ") + std::strerror(error));
  }
  return std::unique_ptr<ShutdownWatch>(new ShutdownWatch(fd, parent));
}

ShutdownWatch::ShutdownWatch(int signal_fd, pid_t parent)
    : signal_fd_(signal_fd), parent_(parent) {}

ShutdownWatch::~ShutdownWatch() { close(signal_fd_); }

bool ShutdownWatch::WaitForStop(std::chrono::milliseconds timeout) {
  if (getppid() != parent_) RequestStop("the parent process exited");
  if (stop_requested()) return true;

  pollfd fds[2] = {{signal_fd_, POLLIN, 0}, {STDIN_FILENO, POLLIN, 0}};
  const nfds_t count = watch_stdin_ ? 2 : 1;
  const int ready = poll(fds, count, static_cast<int>(timeout.count()));
  if (ready < 0 && errno != EINTR) {
    RequestStop(std::string("poll failed: ") + std::strerror(errno));
    return true;
  }
  bool child_changed = false;
  if (ready > 0 && fds[0].revents != 0) DrainSignals(&child_changed);
  if (ready > 0 && watch_stdin_ && fds[1].revents != 0) {
    if ((fds[1].revents & POLLNVAL) != 0) {
      watch_stdin_ = false;
      RequestStop("stdin is not open");
    } else {
      DrainStdin();
    }
  }
  if (getppid() != parent_) RequestStop("the parent process exited");
  return stop_requested();
}

void ShutdownWatch::DrainSignals(bool* child_changed) {
  signalfd_siginfo info;
  while (read(signal_fd_, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
    const int signo = static_cast<int>(info.ssi_signo);
    if (signo == SIGCHLD) {
      *child_changed = true;
    } else if (signo == SIGUSR1) {
      restart_signal_ = SIGINT;
    } else if (signo == SIGUSR2) {
      restart_signal_ = SIGQUIT;
    } else {
      RequestStop(std::string("received SIG") + sigabbrev_np(static_cast<int>(info.ssi_signo)));
    }
  }
}

// Called when poll reports stdin readable: anything written to it is ignored;
// only EOF (or an error, which means the same: nobody holds the other end in
// a usable way) matters.
void ShutdownWatch::DrainStdin() {
  char buffer[4096];
  const ssize_t got = read(STDIN_FILENO, buffer, sizeof buffer);
  if (got > 0 || (got < 0 && (errno == EINTR || errno == EAGAIN))) return;
  watch_stdin_ = false;
  RequestStop(got == 0 ? "stdin reached EOF"
                       : std::string("stdin failed: ") + std::strerror(errno));
}

std::optional<int> ShutdownWatch::TakeRestartRequest() {
  std::optional<int> signal = restart_signal_;
  restart_signal_.reset();
  return signal;
}

void ShutdownWatch::RequestStop(std::string reason) {
  if (stop_reason_.empty()) stop_reason_ = std::move(reason);
}

}  // namespace trellis::testkit
