#include "workers/progress.h"

#include <condition_variable>
#include <mutex>

namespace trellis::workers {
namespace {

struct Progress {
  std::mutex mu;
  std::condition_variable changed;
  uint64_t mark = 0;  // guarded by mu
};

Progress& Shared() {
  static Progress progress;
  return progress;
}

}  // namespace

uint64_t ProgressMark() {
  Progress& p = Shared();
  std::lock_guard lock(p.mu);
  return p.mark;
}

void NoteProgress() {
  Progress& p = Shared();
  {
    std::lock_guard lock(p.mu);
    ++p.mark;
  }
  p.changed.notify_all();
}

uint64_t AwaitProgress(uint64_t seen, std::chrono::milliseconds timeout) {
  Progress& p = Shared();
  std::unique_lock lock(p.mu);
  p.changed.wait_for(lock, timeout, [&] { return p.mark > seen; });
  return p.mark;
}

}  // namespace trellis::workers
