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

// A batch of the capture rows the caller's own transaction wrote so far
// (a drain's writes to a target another transform reads), for staging them
// in that transaction (staging::StageOwnWrites). Only this transaction can
// see them until it commits, so no other batch can take them, and they are
// deleted as they are taken, as any batch's are.
std::unique_ptr<FeedBatch> OwnWritesBatch(std::string schema);
// Whether the caller's transaction wrote capture rows, none of them a
// TRUNCATE's (whose readers rebuild, which a staging batch arranges): what
// OwnWritesBatch would take is worth staging there. False in logical mode,
// where writes go to the slot and leave no capture row.
Result<bool> OwnWritesToStage(pg::Connection& conn, const std::string& schema);

}  // namespace trellis::capture
