// Counts of failures charged, per transform (spec/engine.md "Charging a
// failure"), for the program hosting the engine to export: columns put in
// quarantine, rows recorded in quarantine, keys held, and drain failures
// recorded (a failure charged to nothing). Events of this process's
// workers since it started; the catalog holds what is open now (status/2).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace trellis {

struct ChargeCounts {
  uint64_t quarantined_columns = 0;
  uint64_t quarantined_rows = 0;
  uint64_t held_keys = 0;
  uint64_t drain_failures = 0;
};

// Thread-safe; the process's one instance.
class ChargingMetrics {
 public:
  static ChargingMetrics& Get();

  void ColumnQuarantined(const std::string& transform) {
    Add(transform, &ChargeCounts::quarantined_columns);
  }
  void RowQuarantined(const std::string& transform) {
    Add(transform, &ChargeCounts::quarantined_rows);
  }
  void KeyHeld(const std::string& transform) { Add(transform, &ChargeCounts::held_keys); }
  void DrainFailed(const std::string& transform) { Add(transform, &ChargeCounts::drain_failures); }

  // Makes sure each of `transforms` has counts, at zero if it had none, so
  // its counters exist before their first event: a rate or increase over a
  // series that first appears at 1 misses that first event.
  void Know(const std::vector<std::string>& transforms);

  // Every transform's counts, by transform name.
  std::map<std::string, ChargeCounts> Snapshot() const;

 private:
  void Add(const std::string& transform, uint64_t ChargeCounts::*field);

  mutable std::mutex mu_;
  std::map<std::string, ChargeCounts> counts_;
};

}  // namespace trellis
