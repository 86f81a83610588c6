#include "telemetry/metrics_delta.h"

#include <set>

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
      // A series never sent goes out even at zero: a rate or increase over a
      // series that first appears at 1 misses that first event.
      out.value = now.value - (before ? before->value : 0);
      return before == nullptr || out.value != 0;
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
    // A gauge series that went (a dropped transform's reports) goes from
    // the receiver too, or it would keep its last value for good.
    if (family.type == MetricType::kGauge) {
      std::set<std::vector<std::string>> present;
      for (const auto& series : family.series) present.insert(series.label_values);
      auto it = last_.lower_bound(Key(family.name, {}));
      while (it != last_.end() && it->first.first == family.name) {
        if (present.count(it->first.second)) {
          ++it;
          continue;
        }
        SeriesSnapshot gone;
        gone.label_values = it->first.second;
        gone.removed = true;
        changed.series.push_back(std::move(gone));
        it = last_.erase(it);
      }
    }
    if (!changed.series.empty()) changes.push_back(std::move(changed));
  }
  return changes;
}

}  // namespace trellis::port::telemetry
