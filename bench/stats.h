// Small helpers for summarising repeated measurements.
#pragma once

#include <string>
#include <vector>

namespace trellis::bench {

// The median (mean of the middle two for an even count). REQUIRES: !v.empty().
double Median(std::vector<double> v);
// `value` with `digits` decimals.
std::string Fixed(double value, int digits);
// "0.251, 0.248, ..." with `digits` decimals: the raw rounds for the report.
std::string List(const std::vector<double>& v, int digits);

}  // namespace trellis::bench
