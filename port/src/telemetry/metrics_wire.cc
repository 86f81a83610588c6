#include "telemetry/metrics_wire.h"

#include <cstdint>
#include <string>
#include <utility>

namespace trellis::port::telemetry {
namespace {

// Whole numbers travel as integers (a counter's exact value), others as floats.
protocol::Value Number(double v) {
  constexpr double kExactIntegers = 9007199254740992.0;  // 2^53
  if (v == static_cast<double>(static_cast<int64_t>(v)) && v > -kExactIntegers &&
      v < kExactIntegers) {
    return protocol::Value(static_cast<int64_t>(v));
  }
  return protocol::Value(v);
}

protocol::Array Strings(const std::vector<std::string>& items) {
  protocol::Array array;
  array.reserve(items.size());
  for (const auto& item : items) array.emplace_back(item);
  return array;
}

protocol::Value SeriesValue(const FamilySnapshot& family, const SeriesSnapshot& series) {
  if (series.removed) {
    return protocol::MakeMap(
        {{"labels", Strings(series.label_values)}, {"value", protocol::Value()}});
  }
  if (family.type != MetricType::kHistogram) {
    return protocol::MakeMap(
        {{"labels", Strings(series.label_values)}, {"value", Number(series.value)}});
  }
  protocol::Array counts;
  counts.reserve(series.cumulative.size());
  for (uint64_t c : series.cumulative) counts.emplace_back(c);
  return protocol::MakeMap({{"labels", Strings(series.label_values)},
                            {"counts", std::move(counts)},
                            {"sum", series.sum},
                            {"count", series.count}});
}

}  // namespace

protocol::Array FamiliesValue(const std::vector<FamilySnapshot>& families) {
  protocol::Array out;
  out.reserve(families.size());
  for (const auto& family : families) {
    protocol::Array series;
    series.reserve(family.series.size());
    for (const auto& s : family.series) series.push_back(SeriesValue(family, s));
    protocol::Map entry = protocol::MakeMap({{"name", family.name},
                                             {"type", TypeName(family.type)},
                                             {"help", family.help},
                                             {"labels", Strings(family.label_names)}});
    if (family.type == MetricType::kHistogram) {
      protocol::Array bounds;
      for (double b : family.bounds) bounds.emplace_back(b);
      entry.emplace_back("buckets", std::move(bounds));
    }
    entry.emplace_back("series", std::move(series));
    out.emplace_back(std::move(entry));
  }
  return out;
}

}  // namespace trellis::port::telemetry
