#include "capture/feed.h"

#include "capture/mode_feed.h"

namespace trellis::capture {

std::unique_ptr<CaptureFeed> CatalogFeed(const std::string& schema) {
  return std::make_unique<ModeFeed>(schema);
}

}  // namespace trellis::capture
