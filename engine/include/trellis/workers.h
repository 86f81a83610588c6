// The background work of one handle: the staging worker (when asked for;
// it waits as a standby while another node holds the election) and N drain
// workers, each a thread with its own connection.
#pragma once

#include <memory>
#include <vector>

#include "trellis/options.h"

namespace trellis {

namespace workers {
class WorkerLoop;
}

// Thread-safe: Stop() may be called from any thread, and more than once.
class BackgroundWorkers {
 public:
  static std::unique_ptr<BackgroundWorkers> Start(const ConnectOptions& options, bool staging,
                                                  int drain_threads);
  ~BackgroundWorkers();
  BackgroundWorkers(const BackgroundWorkers&) = delete;
  BackgroundWorkers& operator=(const BackgroundWorkers&) = delete;

  // Stops every worker: running statements are cancelled, threads joined.
  void Stop();
  // Asks every worker to stop and cancels its running statement, without
  // waiting: for a process about to exit.
  void RequestStop();

 private:
  BackgroundWorkers() = default;
  std::vector<std::unique_ptr<workers::WorkerLoop>> workers_;
};

}  // namespace trellis
