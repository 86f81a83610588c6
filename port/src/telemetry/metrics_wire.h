// Metric families as protocol values: the shape of the `metrics` op's
// families and of the `metrics` event (spec/protocol.md section 11).
#pragma once

#include <vector>

#include "telemetry/metrics.h"
#include "trellis/protocol/value.h"

namespace trellis::port::telemetry {

// [{"name", "type", "help", "labels", "buckets" (histograms), "series"}].
protocol::Array FamiliesValue(const std::vector<FamilySnapshot>& families);

}  // namespace trellis::port::telemetry
