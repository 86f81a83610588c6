// Stops the database work of calls that must end early (deadline, cancel
// frame, shutdown).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "call.h"

namespace trellis::port {

// Sends Session::RequestCancel for calls that must stop, from a thread of its
// own: PQcancel opens a connection to the server and waits for it, which the
// io thread must never do. While a call's handler still runs, the cancel is
// sent again every kRetryInterval, because a cancel that reaches the server
// before the handler's next statement does stops nothing.
//
// Thread-safety: Cancel() and WaitSent() may be called from any thread.
class Canceller {
 public:
  static constexpr std::chrono::milliseconds kRetryInterval{200};

  Canceller() = default;
  ~Canceller();
  Canceller(const Canceller&) = delete;
  Canceller& operator=(const Canceller&) = delete;

  // Marks the call cancel_requested at once (a worker that has not started it
  // skips it) and queues the server-side cancel.
  void Cancel(std::shared_ptr<Call> call);

  // Blocks until every cancel asked for so far was sent once, or `deadline`.
  // For shutdown, just before the process exits.
  void WaitSent(std::chrono::steady_clock::time_point deadline);

 private:
  void Loop();

  std::mutex mu_;
  std::condition_variable wake_;
  std::condition_variable sent_cv_;
  std::vector<std::shared_ptr<Call>> fresh_;  // guarded by mu_
  uint64_t asked_ = 0;                        // guarded by mu_
  uint64_t sent_ = 0;                         // guarded by mu_
  bool stopping_ = false;                     // guarded by mu_
  std::thread thread_;                        // started by the first Cancel()
};

}  // namespace trellis::port
