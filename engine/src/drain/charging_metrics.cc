#include "trellis/charging_metrics.h"

namespace trellis {

ChargingMetrics& ChargingMetrics::Get() {
  static ChargingMetrics metrics;
  return metrics;
}

void ChargingMetrics::Add(const std::string& transform, uint64_t ChargeCounts::*field) {
  std::lock_guard<std::mutex> lock(mu_);
  counts_[transform].*field += 1;
}

void ChargingMetrics::Know(const std::vector<std::string>& transforms) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& transform : transforms) counts_.try_emplace(transform);
}

std::map<std::string, ChargeCounts> ChargingMetrics::Snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  return counts_;
}

}  // namespace trellis
