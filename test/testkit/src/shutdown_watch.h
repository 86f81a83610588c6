#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "status.h"

namespace trellis::testkit {

// Watches for every reason the testkit must stop: stdin reaching EOF (the
// parent closed the pipe or died), SIGTERM, SIGINT or SIGHUP, and the parent
// process dying (PR_SET_PDEATHSIG plus a getppid() check). It also wakes
// early on SIGCHLD so callers can check their children promptly, and on
// SIGUSR1/SIGUSR2, the restart requests.
//
// Create() blocks those signals for the whole process and reads them through
// a signalfd; children must unblock them before exec (Spawn does). A stop
// request is sticky: once seen, every later WaitForStop returns true at once.
// Thread-safety: not thread-safe; one instance per process, created before
// any thread or child.
class ShutdownWatch {
 public:
  static Result<std::unique_ptr<ShutdownWatch>> Create();
  ~ShutdownWatch();
  ShutdownWatch(const ShutdownWatch&) = delete;
  ShutdownWatch& operator=(const ShutdownWatch&) = delete;

  // Waits up to `timeout`, or less when a child changed state or a stop was
  // requested. Returns true once a stop has been requested.
  bool WaitForStop(std::chrono::milliseconds timeout);

  bool stop_requested() const { return !stop_reason_.empty(); }

  // The signal to restart the postmaster with, once per request: SIGINT (a
  // fast shutdown) after SIGUSR1, SIGQUIT (immediate) after SIGUSR2. Tests
  // restart a cluster this way to see sessions the server closed.
  std::optional<int> TakeRestartRequest();
  // Why the stop was requested, e.g. "stdin reached EOF"; empty if none.
  const std::string& stop_reason() const { return stop_reason_; }

 private:
  ShutdownWatch(int signal_fd, pid_t parent);

  void DrainSignals(bool* child_changed);
  void DrainStdin();
  void RequestStop(std::string reason);

  const int signal_fd_;
  const pid_t parent_;
  bool watch_stdin_ = true;
  std::optional<int> restart_signal_;
  std::string stop_reason_;
};

}  // namespace trellis::testkit
