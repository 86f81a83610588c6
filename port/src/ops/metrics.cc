// metrics: a snapshot of the port's metrics registry (telemetry/series.cc),
// for Trellis.Metrics.render_prometheus/0. Inline: it only reads atomics.
#include "telemetry/metrics.h"
#include "op_registry.h"
#include "port_context.h"

namespace trellis::port {
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

protocol::Value SeriesValue(const telemetry::FamilySnapshot& family,
                            const telemetry::SeriesSnapshot& series) {
  if (family.type != telemetry::MetricType::kHistogram) {
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

Result<protocol::Value> Metrics(PortContext& port, const protocol::Map&) {
  protocol::Array families;
  for (const auto& family : telemetry::Registry::Global().Snapshot()) {
    protocol::Array series;
    series.reserve(family.series.size());
    for (const auto& s : family.series) series.push_back(SeriesValue(family, s));
    protocol::Map entry = protocol::MakeMap({{"name", family.name},
                                             {"type", telemetry::TypeName(family.type)},
                                             {"help", family.help},
                                             {"labels", Strings(family.label_names)}});
    if (family.type == telemetry::MetricType::kHistogram) {
      protocol::Array bounds;
      for (double b : family.bounds) bounds.emplace_back(b);
      entry.emplace_back("buckets", std::move(bounds));
    }
    entry.emplace_back("series", std::move(series));
    families.emplace_back(std::move(entry));
  }
  const HandleConfig* config = port.config();
  protocol::Value instance =
      port.connected() && config ? protocol::Value(config->instance) : protocol::Value();
  return protocol::Value(
      protocol::MakeMap({{"instance", std::move(instance)}, {"families", std::move(families)}}));
}

const OpRegistrar kMetrics(InlineOp("metrics", Metrics));

}  // namespace
}  // namespace trellis::port
