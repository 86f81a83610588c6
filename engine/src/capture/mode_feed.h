// The feed a catalog captures with, chosen from its capture_feed row
// (catalog step 20; capture/capture_mode.h sets it). One object serves both
// modes and the switch between them, so its SQL fragments hold for either
// and callers can prepare them once:
//   - capture rows (trigger capture, or left from it after a switch) are
//     always staged first, by the trigger feed (capture/trigger_feed.h);
//   - while the catalog has a slot (logical mode, or a switch back to
//     triggers not yet past its mark) the rest comes from the slot
//     (capture/logical_feed.h).
// A watermark holds both a snapshot and an insert LSN: writes before it are
// staged once no capture row of a writer visible in the snapshot is left
// and the slot's staged position has passed the LSN.
#pragma once

#include <string>
#include <string_view>

#include "capture/feed.h"
#include "capture/trigger_feed.h"

namespace trellis::capture {

// Thread-safety: holds only the schema name; safe from any thread.
class ModeFeed final : public CaptureFeed {
 public:
  explicit ModeFeed(std::string schema);

  Result<std::unique_ptr<FeedBatch>> TakeBatch(pg::Connection& conn, int max_rows) override;
  std::string UnstagedRowsSql(bool member) const override;
  std::string OldestUnstagedXidSql() const override;
  Result<std::vector<Disruption>> PauseDisruptedReaders(pg::Connection& conn) override;
  std::string WatermarkSql() const override;
  std::string IsWatermarkSql(std::string_view param) const override;
  std::string UnstagedBeforeSql(std::string_view param, std::string_view covered) const override;

 private:
  std::string schema_;
  TriggerFeed triggers_;
};

}  // namespace trellis::capture
