// The logical-decoding feed: the changes writers committed, read from the
// catalog's replication slot (built-in pgoutput, over a publication of the
// sources) by the elected staging worker, and handed to staging as the same
// `consumed` rows trigger capture makes (capture/decoded_changes.h), so
// ledger pages, deltas and everything after them are unchanged
// (spec/engine.md "Capture feeds").
//
// The slot is read over the staging worker's ordinary connection, inside
// the staging transaction: pg_logical_slot_peek_binary_changes reads
// without confirming, the position staged through is written in the same
// transaction as the pages, and only after that commits is the slot
// advanced to it (pg_replication_slot_advance). Redelivery at or below the
// recorded position is skipped by commit LSN. Why not a walsender
// connection (START_REPLICATION): it needs a second connection per staging
// worker outside the pool, kept open and fed standby status updates, while
// peeking fits the seam as it is, in the one transaction that already
// holds the staging fence.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "capture/feed.h"

namespace trellis::capture {

// The catalog's capture_feed row (catalog step 20), as a batch needs it.
struct SlotPosition {
  bool logical_mode = false;  // false: switching back to triggers (drain up to the mark)
  std::string slot;
  std::string publication;
  std::optional<int64_t> awaiting_mark;
  std::optional<std::string> staged_lsn;  // pg_lsn text; nullopt: nothing read yet
  std::optional<std::string> pending_lsn;
  std::optional<std::string> pending_snapshot;
  bool written_recently = false;  // the position was written in the last 50 ms
  uint32_t marks_relid = 0;
};

// The batch of the changes in the slot after `position`: at most about
// `max_rows` rows, always whole transactions. REQUIRES: inside the staging
// transaction, which holds the staging fence.
Result<std::unique_ptr<FeedBatch>> TakeSlotBatch(pg::Connection& conn, const std::string& schema,
                                                 const SlotPosition& position, int max_rows);

// A pg_lsn's text form ("16/B374D848") as a number; nullopt when malformed.
std::optional<uint64_t> ParseLsn(const std::string& text);

}  // namespace trellis::capture
