// Counters and gauges the engine's background workers keep about their own
// work, for the program hosting the engine to read (the port program renders
// them as metrics when asked). The engine only bumps them; it never knows who
// reads them or how they are exported.
#pragma once

#include <atomic>
#include <cstdint>

namespace trellis {

// Thread-safety: every member is atomic; writers use relaxed increments and
// readers take relaxed loads (the values are statistics, never used to
// synchronise anything). Process-wide: one port program hosts one handle, so
// the process's workers are the handle's workers.
struct EngineMetrics {
  // Ledger pages drained and committed, and the target keys they held.
  std::atomic<uint64_t> pages_drained{0};
  std::atomic<uint64_t> keys_drained{0};
  // Pages whose recompute failed and were scheduled for a retry.
  std::atomic<uint64_t> pages_failed{0};
  // Drained batches by the path the chooser took (spec/engine.md "Batch
  // paths"), and rebuilds that failed and went by their pages instead.
  std::atomic<uint64_t> batches_delta{0};
  std::atomic<uint64_t> batches_recompute{0};
  std::atomic<uint64_t> batches_rebuild{0};
  std::atomic<uint64_t> rebuild_fallbacks{0};
  // Capture rows the staging worker consumed into ledger pages.
  std::atomic<uint64_t> capture_rows_staged{0};
  // Target rows written by builds' key ranges.
  std::atomic<uint64_t> backfill_rows{0};
  // Drains that woke this process's staging worker at once because
  // another transform reads their target (a stage, a chain's upstream).
  std::atomic<uint64_t> stage_wakes{0};
  // Capture rows of such drains' writes that the drain staged for the
  // readers in its own transaction (staging::StageOwnWrites), so no staging
  // batch and no wake were needed for them.
  std::atomic<uint64_t> stage_writes_staged{0};
  // Wake-ups of this process's workers, by role, that another process's
  // commit sent (LISTEN/NOTIFY: pages staged there, for the drains here; a
  // stage drained there, for the staging worker here).
  std::atomic<uint64_t> remote_staging_wakes{0};
  std::atomic<uint64_t> remote_drain_wakes{0};
  // Logical capture (capture/slot_health.h): replication slots found lost
  // and replaced, and sources published again after they were removed from
  // the publication by hand.
  std::atomic<uint64_t> slots_replaced{0};
  std::atomic<uint64_t> publication_repairs{0};

  // Worker threads running (connected or reconnecting), by role.
  std::atomic<int64_t> staging_workers{0};
  std::atomic<int64_t> drain_workers{0};
  // 1 while a staging worker of this process holds the instance's staging
  // election (the others, anywhere, stand by).
  std::atomic<int64_t> staging_elected{0};
  // The logical-decoding feed's slot, as the elected staging worker last
  // saw it (0 in triggers mode and when not elected): flushed WAL past the
  // staged position, how long (ms) that position has not moved while some
  // is, and the WAL the slot holds back.
  std::atomic<int64_t> slot_lag_bytes{0};
  std::atomic<int64_t> slot_lag_ms{0};
  std::atomic<int64_t> slot_retained_bytes{0};
};

// The process's one set.
EngineMetrics& GlobalEngineMetrics();

}  // namespace trellis
