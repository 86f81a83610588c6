// A trellis-port child process with pipes on its fds 3 and 4, as the BEAM
// starts it (replay drives one).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trellis/protocol/frame.h"
#include "trellis/status.h"

namespace trellis::port {

// Not thread-safe. The destructor kills a child still running and reaps it.
class ChildPort {
 public:
  // Starts `exe` with `args` (argv[1..]); stdin is /dev/null, stdout and
  // stderr are inherited.
  static Result<std::unique_ptr<ChildPort>> Spawn(const std::string& exe,
                                                  const std::vector<std::string>& args);
  ~ChildPort();
  ChildPort(const ChildPort&) = delete;
  ChildPort& operator=(const ChildPort&) = delete;

  // Writes one frame (blocking).
  Status Send(std::string_view body);
  // The next frame body; a timeout or connection error at `deadline` or when
  // the child closes fd 4.
  Result<std::string> Receive(std::chrono::steady_clock::time_point deadline);
  // Closes the child's fd 3 (it sees EOF and exits).
  void CloseInput();
  // The exit status (128 + signal when killed), or nullopt if it has not
  // exited by `deadline`.
  std::optional<int> Wait(std::chrono::steady_clock::time_point deadline);

 private:
  ChildPort(pid_t pid, int to_child, int from_child)
      : pid_(pid), to_child_(to_child), from_child_(from_child) {}

  pid_t pid_;
  int to_child_;
  int from_child_;
  bool reaped_ = false;
  int exit_status_ = 0;  // valid once reaped_ (128 + signal for a killed child)
  protocol::FrameReader reader_;
};

// The path of the running executable (/proc/self/exe).
Result<std::string> SelfExecutable();

}  // namespace trellis::port
