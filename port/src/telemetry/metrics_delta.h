// What changed in the metrics registry since the last look, for the
// `metrics` events the port pushes to the BEAM (spec/protocol.md section 11).
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "telemetry/metrics.h"

namespace trellis::port::telemetry {

// Turns successive snapshots of the registry into changes:
//   counter   - the increase since the last Take (series that did not move
//               are left out; a series never sent goes out, at 0 too);
//   gauge     - the current value, for series whose value changed (or that
//               were never sent), and a removal (`removed`) for each series
//               sent before that is gone;
//   histogram - the increase of each cumulative bucket, of the sum and of
//               the count (series with no new observation are left out).
// Families with no series left are left out. Summing every change ever taken
// gives the registry's totals, so the receiver can keep totals across
// restarts of this process. Not thread-safe: one owner (the io thread).
class MetricsDelta {
 public:
  std::vector<FamilySnapshot> Take(const std::vector<FamilySnapshot>& now);

 private:
  using Key = std::pair<std::string, std::vector<std::string>>;  // family, label values
  std::map<Key, SeriesSnapshot> last_;
};

}  // namespace trellis::port::telemetry
