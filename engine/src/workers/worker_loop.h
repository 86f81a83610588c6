// The shared skeleton of a background worker: a thread with its own database
// connection, reconnecting with backoff, heartbeating into the catalog, and
// stopping promptly when asked.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "pg/connection.h"
#include "trellis/options.h"
#include "trellis/status.h"

namespace trellis::workers {

// Thread-safe: Stop() may be called from any thread; everything else runs on
// the worker's own thread.
class WorkerLoop {
 public:
  WorkerLoop(ConnectOptions options, std::string role, std::string id);
  virtual ~WorkerLoop();
  WorkerLoop(const WorkerLoop&) = delete;
  WorkerLoop& operator=(const WorkerLoop&) = delete;

  void Start();
  // Asks the thread to stop, cancels its running statement, and joins it.
  void Stop();
  // The same without joining.
  void RequestStop();

  // Wakes every idle loop of `role` in this process from its pause now.
  // Staging calls it for "drain" when a batch made pages: a drain in the
  // same port starts on them at once rather than at its next poll (up to
  // 10 ms later). Other ports hear of it through the notification the same
  // commit sent (wake_channel.h), which their WakeListener turns into this
  // call; polling remains the fallback.
  static void NudgeRole(const std::string& role);

 protected:
  // One unit of work. Returns true when it found work (the loop runs again at
  // once) and false when idle (the loop sleeps a little first). An error
  // drops the connection and reconnects after a backoff.
  virtual Result<bool> Step(pg::Connection& conn) = 0;
  // Called once per connection before the first Step; false to retry later.
  virtual Result<bool> Prepare(pg::Connection&) { return true; }
  // Called after a connection's last Step, before it closes (it is broken,
  // failed, or the worker is stopping): session-level state ends with it.
  virtual void Disconnected() {}

  bool stopping() const { return stopping_.load(); }
  const ConnectOptions& options() const { return options_; }
  const std::string& role() const { return role_; }
  const std::string& id() const { return id_; }
  // Sleeps up to `d`, waking early on Stop() and on a nudge.
  void SleepFor(std::chrono::milliseconds d);
  Status Heartbeat(pg::Connection& conn);

  // The thread's body: connects, heartbeats and steps until Stop(). A
  // thread that keeps the loop's start, stop and nudges but does not step
  // (the wake listener, wake_listener.h) replaces it.
  virtual void Run();

 private:
  ConnectOptions options_;
  std::string role_;
  std::string id_;
  std::atomic<bool> stopping_{false};
  bool nudged_ = false;  // guarded by mu_
  std::mutex mu_;
  std::condition_variable wake_;
  pg::Connection* current_ = nullptr;  // guarded by mu_, for Stop()'s cancel
  std::thread thread_;
};

// The longest wait between two attempts to connect, for every loop that
// reconnects with a doubling backoff (WorkerLoop, the wake listener).
inline constexpr std::chrono::milliseconds kMaxReconnectBackoff{5000};

// A process-unique worker id: "<host>:<pid>:<role>:<n>".
std::string MakeWorkerId(const std::string& role);

}  // namespace trellis::workers
