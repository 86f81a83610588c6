// Wake-ups from other ports: one thread per port with its own session,
// LISTENing on the wake channels (wake_channel.h) of the roles this port
// runs, that nudges this process's idle workers of the role named
// (WorkerLoop::NudgeRole) when another port's commit made work for them:
// pages staged by the elected staging worker elsewhere, or a stage drained
// elsewhere whose target the next stage reads. Polling stays the fallback:
// a wake lost while the listener reconnects costs at most one idle poll.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "pg/listen_session.h"
#include "trellis/options.h"
#include "trellis/status.h"
#include "workers/worker_loop.h"

namespace trellis::workers {

// Thread-safe: Stop() and RequestStop() may be called from any thread.
// A WorkerLoop for its start, stop and sleeps, with its own thread body: it
// waits on its socket rather than stepping, and keeps no heartbeat (it holds
// no work a lease would guard).
class WakeListener : public WorkerLoop {
 public:
  // REQUIRES: `roles` are "staging" and/or "drain", and not empty.
  WakeListener(ConnectOptions options, std::vector<std::string> roles);
  ~WakeListener() override;

  // How long one wait on the socket lasts: the bound on how late Stop() is
  // noticed.
  static constexpr auto kWaitSlice = std::chrono::milliseconds(100);
  // How often an idle session is checked with a statement: a server or
  // network that vanished without a word leaves nothing to read, so only a
  // statement finds the session gone.
  static constexpr auto kCheckEvery = std::chrono::seconds(5);

 protected:
  void Run() override;
  // Never called: Run() is replaced.
  Result<bool> Step(pg::Connection&) override { return false; }

 private:
  // LISTENs, then waits for notifications until the session fails or Stop().
  // `listening` runs once the LISTENs took effect.
  Status Listen(pg::ListenSession& session, const std::function<void()>& listening);

  std::vector<std::string> roles_;
};

}  // namespace trellis::workers
