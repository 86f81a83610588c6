// The port's metrics registry: counters, gauges and histograms with labels.
//
// A family (one metric name) is a namespace-scope constant that registers
// itself at static initialisation, so adding a series is one line in
// series.cc:
//
//   const CounterFamily kCalls("trellis_calls_total", "Calls answered.", {"op", "result"});
//   kCalls.With({"ping", "ok"}).Add();
//
// The `metrics` op takes a Snapshot() of every family; the BEAM renders it as
// Prometheus text (spec/protocol.md, op `metrics`). Nothing here knows about
// msgpack or the wire.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace trellis::port::telemetry {

enum class MetricType { kCounter, kGauge, kHistogram };

// "counter", "gauge" or "histogram", as the wire and Prometheus spell them.
std::string_view TypeName(MetricType type);

// One series' values when the snapshot was taken.
struct SeriesSnapshot {
  std::vector<std::string> label_values;  // in the order of the family's label names
  double value = 0;                       // counter, gauge
  std::vector<uint64_t> cumulative;       // histogram: observations <= each bound
  double sum = 0;                         // histogram: sum of the observations
  uint64_t count = 0;                     // histogram: number of observations
  bool removed = false;                   // in a change (MetricsDelta): a gauge series that went
};

struct FamilySnapshot {
  std::string name;
  std::string help;
  MetricType type = MetricType::kCounter;
  std::vector<std::string> label_names;
  std::vector<double> bounds;          // histogram: bucket upper bounds, ascending; +Inf implied
  std::vector<SeriesSnapshot> series;  // sorted by label values
};

// A monotonically increasing count. Thread-safe (relaxed atomics).
class Counter {
 public:
  void Add(uint64_t n = 1) { value_.fetch_add(n, std::memory_order_relaxed); }
  uint64_t value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> value_{0};
};

// A value that goes up and down. Thread-safe (relaxed atomics).
class Gauge {
 public:
  void Set(int64_t v) { value_.store(v, std::memory_order_relaxed); }
  void Add(int64_t n) { value_.fetch_add(n, std::memory_order_relaxed); }
  int64_t value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<int64_t> value_{0};
};

// Observations counted into fixed buckets. Thread-safe: each field is its own
// atomic, so a snapshot taken during an Observe may see the count one ahead
// of a bucket (Prometheus tolerates that; it never goes backwards).
class Histogram {
 public:
  // REQUIRES: `bounds` ascending; it must outlive the histogram.
  explicit Histogram(const std::vector<double>& bounds);
  void Observe(double v);
  void SnapshotInto(SeriesSnapshot& out) const;

 private:
  const std::vector<double>& bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> buckets_;  // per bucket, not cumulative
  std::atomic<double> sum_{0};
  std::atomic<uint64_t> count_{0};
};

// Base of every family. Registers itself with Registry::Global().
// REQUIRES: constructed at namespace scope (static initialisation), with a
// name no other family has (a duplicate aborts: a programmer error).
class Family {
 public:
  Family(std::string name, std::string help, MetricType type, std::vector<std::string> label_names);
  virtual ~Family() = default;
  Family(const Family&) = delete;
  Family& operator=(const Family&) = delete;

  const std::string& name() const { return name_; }
  const std::vector<std::string>& label_names() const { return label_names_; }
  // Thread-safe.
  FamilySnapshot Snapshot() const;

 protected:
  // Fills `out.series` (and `out.bounds` for a histogram).
  virtual void SnapshotSeries(FamilySnapshot& out) const = 0;
  // Aborts unless `count` values were given for the family's labels.
  void CheckArity(size_t count) const;

 private:
  std::string name_;
  std::string help_;
  MetricType type_;
  std::vector<std::string> label_names_;
};

// Families whose series are cells (Counter, Gauge, Histogram) created on
// first use of their label values and kept for the process's life.
template <typename Cell>
class CellFamily : public Family {
 public:
  using Family::Family;

  // The series with these label values, one per label name. The reference
  // stays valid for the process's life. Thread-safe.
  Cell& With(std::initializer_list<std::string_view> values) const {
    return With(std::vector<std::string>(values.begin(), values.end()));
  }
  Cell& With(std::vector<std::string> values) const {
    CheckArity(values.size());
    std::lock_guard lock(mu_);
    auto it = series_.find(values);
    if (it == series_.end()) it = series_.emplace(std::move(values), NewCell()).first;
    return *it->second;
  }
  // The family's one series. REQUIRES: the family has no labels.
  Cell& Get() const { return With(std::vector<std::string>{}); }

 protected:
  virtual std::unique_ptr<Cell> NewCell() const = 0;
  void SnapshotSeries(FamilySnapshot& out) const override {
    std::lock_guard lock(mu_);
    for (const auto& [labels, cell] : series_) {
      SeriesSnapshot s;
      s.label_values = labels;
      SnapshotCell(*cell, s);
      out.series.push_back(std::move(s));
    }
  }
  virtual void SnapshotCell(const Cell& cell, SeriesSnapshot& out) const = 0;

 private:
  mutable std::mutex mu_;
  mutable std::map<std::vector<std::string>, std::unique_ptr<Cell>> series_;
};

class CounterFamily final : public CellFamily<Counter> {
 public:
  CounterFamily(std::string name, std::string help, std::vector<std::string> label_names = {})
      : CellFamily(std::move(name), std::move(help), MetricType::kCounter, std::move(label_names)) {
  }

 private:
  std::unique_ptr<Counter> NewCell() const override { return std::make_unique<Counter>(); }
  void SnapshotCell(const Counter& cell, SeriesSnapshot& out) const override {
    out.value = static_cast<double>(cell.value());
  }
};

class GaugeFamily final : public CellFamily<Gauge> {
 public:
  GaugeFamily(std::string name, std::string help, std::vector<std::string> label_names = {})
      : CellFamily(std::move(name), std::move(help), MetricType::kGauge, std::move(label_names)) {}

 private:
  std::unique_ptr<Gauge> NewCell() const override { return std::make_unique<Gauge>(); }
  void SnapshotCell(const Gauge& cell, SeriesSnapshot& out) const override {
    out.value = static_cast<double>(cell.value());
  }
};

class HistogramFamily final : public CellFamily<Histogram> {
 public:
  // REQUIRES: `bounds` ascending and non-empty.
  HistogramFamily(std::string name, std::string help, std::vector<std::string> label_names,
                  std::vector<double> bounds);

 private:
  std::unique_ptr<Histogram> NewCell() const override {
    return std::make_unique<Histogram>(bounds_);
  }
  void SnapshotSeries(FamilySnapshot& out) const override;
  void SnapshotCell(const Histogram& cell, SeriesSnapshot& out) const override {
    cell.SnapshotInto(out);
  }

  const std::vector<double> bounds_;
};

// A counter or gauge family whose values are read when a snapshot is taken,
// from state someone else keeps (the engine's counters, engine_metrics.h).
class CallbackFamily final : public Family {
 public:
  using Sample = std::pair<std::vector<std::string>, double>;  // label values, value
  using ReadAll = std::function<std::vector<Sample>()>;

  // A family without labels: `read` returns its one value.
  CallbackFamily(std::string name, std::string help, MetricType type, std::function<double()> read);
  // A family with labels: `read` returns every series.
  CallbackFamily(std::string name, std::string help, MetricType type,
                 std::vector<std::string> label_names, ReadAll read);

 private:
  void SnapshotSeries(FamilySnapshot& out) const override;

  ReadAll read_;
};

// Every family of the process, in name order. Families are added during
// static initialisation only, so reads need no lock once main() runs.
class Registry {
 public:
  static Registry& Global();

  void Add(const Family* family);
  // Thread-safe once main() runs.
  std::vector<FamilySnapshot> Snapshot() const;

 private:
  std::map<std::string, const Family*> families_;
};

}  // namespace trellis::port::telemetry
