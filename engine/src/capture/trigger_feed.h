// The trigger feed: statement triggers on every captured relation write one
// row per statement into the catalog's capture table, in the writer's own
// transaction (spec/engine.md "Capture"). Staging deletes the rows it
// takes, so a row is staged exactly once with no cursor: only committed
// rows are visible to staging, and a writer that commits late is simply
// seen by a later batch. A watermark is a snapshot of committed
// transaction ids.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "capture/feed.h"

namespace trellis::capture {

// Thread-safety: holds only the schema name; safe from any thread.
class TriggerFeed final : public CaptureFeed {
 public:
  explicit TriggerFeed(std::string schema);

  Result<std::unique_ptr<FeedBatch>> TakeBatch(pg::Connection& conn, int max_rows) override;
  std::string UnstagedRowsSql(bool member) const override;
  std::string OldestUnstagedXidSql() const override;
  Result<std::vector<Disruption>> PauseDisruptedReaders(pg::Connection& conn) override;
  std::string WatermarkSql() const override;
  std::string IsWatermarkSql(std::string_view param) const override;
  std::string UnstagedBeforeSql(std::string_view param, std::string_view covered) const override;

 private:
  std::string schema_;
};

}  // namespace trellis::capture
