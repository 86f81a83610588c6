#include "capture/feed.h"

#include "capture/trigger_feed.h"

namespace trellis::capture {

std::unique_ptr<CaptureFeed> CatalogFeed(const std::string& schema) {
  return std::make_unique<TriggerFeed>(schema);
}

}  // namespace trellis::capture
