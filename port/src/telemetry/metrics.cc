#include "telemetry/metrics.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace trellis::port::telemetry {

std::string_view TypeName(MetricType type) {
  switch (type) {
    case MetricType::kCounter:
      return "counter";
    case MetricType::kGauge:
      return "gauge";
    case MetricType::kHistogram:
      return "histogram";
  }
  return "untyped";
}

Histogram::Histogram(const std::vector<double>& bounds)
    : bounds_(bounds), buckets_(new std::atomic<uint64_t>[bounds.size() + 1]) {
  for (size_t i = 0; i <= bounds_.size(); ++i) buckets_[i].store(0, std::memory_order_relaxed);
}

void Histogram::Observe(double v) {
  // The first bucket whose upper bound holds v; the last one is +Inf.
  const size_t bucket =
      static_cast<size_t>(std::lower_bound(bounds_.begin(), bounds_.end(), v) - bounds_.begin());
  buckets_[bucket].fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(v, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
}

void Histogram::SnapshotInto(SeriesSnapshot& out) const {
  out.cumulative.clear();
  uint64_t running = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    running += buckets_[i].load(std::memory_order_relaxed);
    out.cumulative.push_back(running);
  }
  running += buckets_[bounds_.size()].load(std::memory_order_relaxed);
  out.sum = sum_.load(std::memory_order_relaxed);
  // The count read after the buckets could be ahead of them; never behind,
  // or the +Inf bucket would exceed it.
  out.count = std::max(count_.load(std::memory_order_relaxed), running);
}

Family::Family(std::string name, std::string help, MetricType type,
               std::vector<std::string> label_names)
    : name_(std::move(name)),
      help_(std::move(help)),
      type_(type),
      label_names_(std::move(label_names)) {
  Registry::Global().Add(this);
}

FamilySnapshot Family::Snapshot() const {
  FamilySnapshot out;
  out.name = name_;
  out.help = help_;
  out.type = type_;
  out.label_names = label_names_;
  SnapshotSeries(out);
  return out;
}

void Family::CheckArity(size_t count) const {
  if (count == label_names_.size()) return;
  std::fprintf(stderr, "trellis-port: metric %s takes %zu label values, got %zu\n", name_.c_str(),
               label_names_.size(), count);
  std::abort();
}

HistogramFamily::HistogramFamily(std::string name, std::string help,
                                 std::vector<std::string> label_names, std::vector<double> bounds)
    : CellFamily(std::move(name), std::move(help), MetricType::kHistogram, std::move(label_names)),
      bounds_(std::move(bounds)) {}

void HistogramFamily::SnapshotSeries(FamilySnapshot& out) const {
  out.bounds = bounds_;
  CellFamily::SnapshotSeries(out);
}

CallbackFamily::CallbackFamily(std::string name, std::string help, MetricType type,
                               std::function<double()> read)
    : Family(std::move(name), std::move(help), type, {}), read_([read = std::move(read)] {
        return std::vector<Sample>{{{}, read()}};
      }) {}

CallbackFamily::CallbackFamily(std::string name, std::string help, MetricType type,
                               std::vector<std::string> label_names, ReadAll read)
    : Family(std::move(name), std::move(help), type, std::move(label_names)),
      read_(std::move(read)) {}

void CallbackFamily::SnapshotSeries(FamilySnapshot& out) const {
  for (auto& [labels, value] : read_()) {
    CheckArity(labels.size());
    SeriesSnapshot s;
    s.label_values = std::move(labels);
    s.value = value;
    out.series.push_back(std::move(s));
  }
  std::sort(out.series.begin(), out.series.end(),
            [](const SeriesSnapshot& a, const SeriesSnapshot& b) {
              return a.label_values < b.label_values;
            });
}

Registry& Registry::Global() {
  static Registry registry;
  return registry;
}

void Registry::Add(const Family* family) {
  if (!families_.emplace(family->name(), family).second) {
    // Static initialisation: no logger yet, so stderr directly.
    std::fprintf(stderr, "trellis-port: metric %s registered twice\n", family->name().c_str());
    std::abort();
  }
}

std::vector<FamilySnapshot> Registry::Snapshot() const {
  std::vector<FamilySnapshot> out;
  out.reserve(families_.size());
  for (const auto& [name, family] : families_) out.push_back(family->Snapshot());
  return out;
}

}  // namespace trellis::port::telemetry
