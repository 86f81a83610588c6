// The quarantine reads and held-key release (spec/engine.md "Charging a
// failure"): columns in quarantine, the rows that fail for them, and the
// release of a key a transform holds.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace trellis {

// A column in quarantine: paused with kind "quarantine", its failing rows
// recorded, every other value still maintained.
struct QuarantineEntry {
  std::string target;     // its address, "transform.column"
  std::string transform;  // the transform's name
  std::string column;
  std::string reason;               // the pause reason: what failed first, and the fix
  std::optional<int64_t> since_us;  // when it was put in quarantine (poisoned since)
  int64_t rows = 0;                 // rows recorded as failing
};

// One recorded failing row of a quarantined column.
struct QuarantineSample {
  std::string target;            // "transform.column"
  std::vector<std::string> key;  // the target key, as text, in key-column order
  // The input values the row is computed from (source column -> text; unset
  // for NULL); empty when they could not be read.
  std::vector<std::pair<std::string, std::optional<std::string>>> inputs;
  std::optional<std::string> sqlstate;
  std::string error;  // PostgreSQL's message
  int64_t since_us = 0;
};

struct SamplePage {
  std::vector<QuarantineSample> samples;
  std::optional<std::string> next_cursor;  // unset on the last page
};

inline constexpr int64_t kMaxSampleLimit = 1000;

}  // namespace trellis
