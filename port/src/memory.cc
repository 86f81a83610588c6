#include "memory.h"

#include <malloc.h>

#include <atomic>
#include <chrono>

namespace trellis::port {
namespace {

constexpr int kMmapThresholdBytes = 128 * 1024;
constexpr int kMaxArenas = 4;
constexpr std::chrono::milliseconds kMinTrimInterval{100};

std::atomic<int64_t> last_trim_ms{0};

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

void ConfigureMalloc() {
  mallopt(M_MMAP_THRESHOLD, kMmapThresholdBytes);
  mallopt(M_ARENA_MAX, kMaxArenas);
}

void ReleaseFreedMemory() {
  const int64_t now = NowMs();
  int64_t last = last_trim_ms.load(std::memory_order_relaxed);
  if (now - last < kMinTrimInterval.count()) return;
  if (!last_trim_ms.compare_exchange_strong(last, now, std::memory_order_relaxed)) return;
  malloc_trim(0);
}

}  // namespace trellis::port
