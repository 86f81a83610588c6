// Random Values and Messages for round-trip properties. Deterministic for a
// given seed, so a failure reproduces.
#pragma once

#include <random>

#include "trellis/protocol/message.h"
#include "trellis/protocol/value.h"

namespace trellis::testing {

// Not thread-safe (owns its engine).
class RandomValues {
 public:
  explicit RandomValues(uint32_t seed) : rng_(seed) {}

  // Ints clustered around the width boundaries, floats from random bits (NaN
  // and infinities included), strings and bins up to 300 bytes, containers
  // up to `max_depth` deep.
  protocol::Value Any(int max_depth = 4);
  protocol::Value Int();
  protocol::Map StringKeyedMap(int max_depth);
  std::string Text(size_t max_len);
  protocol::Message AnyMessage();

 private:
  uint64_t Below(uint64_t n) { return std::uniform_int_distribution<uint64_t>(0, n - 1)(rng_); }

  std::mt19937_64 rng_;
};

}  // namespace trellis::testing
