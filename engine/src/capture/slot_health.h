// The health of a catalog's logical-decoding feed (spec/engine.md "Capture
// feeds", "Health"): what status/2 reports as `capture_failure`, what the
// staging worker repairs, logs and publishes as metrics. Read live from the
// server (pg_replication_slots, pg_publication_tables) and the catalog's
// capture_feed row, so every port reports the same, and nothing is stored.
//
// The kinds, beside the trigger feed's `disruption` (capture/disruption.h),
// a closed set spelled here once:
//   - `slot_lost`: the slot is gone (dropped by hand), invalidated
//     (`wal_status = 'lost'`, by max_slot_wal_keep_size) or unreadable (its
//     publication dropped). What it held is gone: the staging worker makes a
//     new slot and rebuilds every transform (ReplaceLostSlot).
//   - `publication_altered`: a source's table is missing from the
//     publication (ALTER PUBLICATION ... DROP TABLE by hand). Its writes since
//     were not decoded: the staging worker publishes it again and rebuilds
//     its readers.
//   - `slot_behind`: the consumer fell behind (the staged position has not
//     moved for kBehindSeconds while there is WAL to read: no staging handle
//     connected, or staging failing) or the slot retains more WAL than
//     kRetainedWalLimitBytes, or the server marks its WAL `unreserved`
//     (next to be invalidated). Nothing is lost yet; the fix is the
//     operator's: keep a staging handle connected and healthy.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "pg/connection.h"
#include "trellis/status.h"
#include "trellis/types.h"

namespace trellis::capture {

// The staged position not moving for this long while there is WAL to read
// is `slot_behind`.
inline constexpr int kBehindSeconds = 30;
// WAL a slot may hold back before it is `slot_behind` (1 GiB).
inline constexpr int64_t kRetainedWalLimitBytes = int64_t{1} << 30;

inline constexpr const char* kSlotLost = "slot_lost";
inline constexpr const char* kPublicationAltered = "publication_altered";
inline constexpr const char* kSlotBehind = "slot_behind";

// What one look at the feed found. No slot recorded (triggers mode, or no
// transform yet): `has_slot` false and nothing else set.
struct FeedHealth {
  bool has_slot = false;
  std::string slot;
  std::string publication;
  // Set when the slot cannot be read: what happened to it, for messages.
  std::optional<std::string> lost;
  // Sources (ids) with a table missing from the publication, and the
  // tables ("schema.table").
  std::vector<int> altered_sources;
  std::vector<std::string> altered_tables;
  int64_t lag_bytes = 0;       // flushed WAL past the staged position
  double lag_seconds = 0;      // since the staged position last moved, while lag_bytes > 0
  int64_t retained_bytes = 0;  // WAL the slot keeps (insert LSN - restart_lsn)
  bool unreserved = false;     // wal_status 'unreserved': invalidated next
  std::optional<int64_t> staged_at_us;
  // Set when behind: what, with the fix.
  std::optional<std::string> behind;
};

// Looks at the feed of the catalog in `schema` now.
Result<FeedHealth> ReadFeedHealth(pg::Connection& conn, const std::string& schema);

// The feed's failure as status/2 reports it for transform `transform_id`:
// a lost or lagging slot for every transform, an altered publication for
// the readers of the sources it lacks; nullopt when capture is whole.
Result<std::optional<CaptureFailureStatus>> FeedFailureOf(pg::Connection& conn,
                                                          const std::string& schema,
                                                          int transform_id);

// The staging worker's round over the feed, about every second: drops an
// unused slot, replaces a lost one, publishes again what was removed from
// the publication (rebuilding the readers), publishes the lag metrics and
// logs each failure when it starts, when it ends, and every 10 minutes
// while it lasts. State between rounds lives in `tending`.
// REQUIRES: outside a transaction; the caller holds the staging election.
struct SlotTending {
  std::string last_behind;
  std::chrono::steady_clock::time_point behind_logged_at{};
};
Status TendSlot(pg::Connection& conn, const std::string& schema, SlotTending& tending);

// Clears the feed's gauges (the worker lost the election or stopped).
void ClearSlotMetrics();

}  // namespace trellis::capture
