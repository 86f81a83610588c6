#include "workers/wake_channel.h"

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <random>

namespace trellis::workers {
namespace {

constexpr std::size_t kMaxChannelBytes = 63;  // NAMEDATALEN - 1

// 16 hex digits of a 64-bit FNV-1a hash: stable across builds and hosts,
// which the channel must be (every port of a fleet computes it).
std::string StableHash(const std::string& text) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

}  // namespace

std::string WakeChannel(const std::string& schema, const std::string& role) {
  std::string spelled = "trellis." + role + "." + schema;
  if (spelled.size() <= kMaxChannelBytes) return spelled;
  return "trellis~" + role + "~" + StableHash(schema);
}

std::optional<std::string> WakeRole(const std::string& schema, const std::string& channel) {
  for (const char* role : {"staging", "drain"}) {
    if (WakeChannel(schema, role) == channel) return std::string(role);
  }
  return std::nullopt;
}

const std::string& WakeSender() {
  static const std::string sender = [] {
    std::random_device random;
    const uint64_t part = (static_cast<uint64_t>(random()) << 32) ^ random();
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(part));
    return std::to_string(getpid()) + ":" + buf;
  }();
  return sender;
}

}  // namespace trellis::workers
