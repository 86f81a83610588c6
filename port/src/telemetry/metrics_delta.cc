#include "telemetry/metrics_delta.h"

namespace trellis::port::telemetry {
namespace {

// The change of `now` against `before` (zero-valued when never sent), or
// false when there is nothing to send.
bool Change(MetricType type, const SeriesSnapshot& now, const SeriesSnapshot* before,
            SeriesSnapshot& out) {
  out.label_values = now.label_values;
  switch (type) {
    case MetricType::kGauge:
      out.value = now.value;
      return before == nullptr || before->value != now.value;
    case MetricType::kCounter:
      out.value = now.value - (before ? before->value : 0);
      return out.value != 0;
    case MetricType::kHistogram:
      out.count = now.count - (before ? before->count : 0);
      out.sum = now.sum - (before ? before->sum : 0);
      out.cumulative = now.cumulative;
      if (before && before->cumulative.size() == now.cumulative.size()) {
        for (size_t i = 0; i < out.cumulative.size(); ++i) {
          out.cumulative[i] -= before->cumulative[i];
        }
      }
      return out.count != 0;
  }
  return false;
}

}  // namespace

std::vector<FamilySnapshot> MetricsDelta::Take(const std::vector<FamilySnapshot>& now) {
  std::vector<FamilySnapshot> changes;
  for (const auto& family : now) {
    FamilySnapshot changed{family.name,        family.help,   family.type,
                           family.label_names, family.bounds, {}};
    for (const auto& series : family.series) {
      auto key = Key(family.name, series.label_values);
      auto it = last_.find(key);
      SeriesSnapshot change;
      if (!Change(family.type, series, it == last_.end() ? nullptr : &it->second, change)) {
        continue;
      }
      changed.series.push_back(std::move(change));
      last_.insert_or_assign(std::move(key), series);
    }
    if (!changed.series.empty()) changes.push_back(std::move(changed));
  }
  return changes;
}

}  // namespace trellis::port::telemetry
