#include "telemetry/log_level.h"

namespace trellis::port::telemetry {

std::string_view WireLevelName(spdlog::level::level_enum level) {
  switch (level) {
    case spdlog::level::trace:
    case spdlog::level::debug:
      return "debug";
    case spdlog::level::info:
      return "info";
    case spdlog::level::warn:
      return "warning";
    case spdlog::level::err:
      return "error";
    default:
      return "critical";
  }
}

std::optional<spdlog::level::level_enum> ParseWireLevel(std::string_view name) {
  if (name == "debug") return spdlog::level::debug;
  if (name == "info") return spdlog::level::info;
  if (name == "warning") return spdlog::level::warn;
  if (name == "error") return spdlog::level::err;
  if (name == "critical") return spdlog::level::critical;
  if (name == "off") return spdlog::level::off;
  return std::nullopt;
}

const std::vector<std::string>& WireLevelNames() {
  static const std::vector<std::string> names = {"debug", "info", "warning", "error", "critical"};
  return names;
}

std::string ThresholdChoices() { return "debug, info, warning, error, critical or off"; }

}  // namespace trellis::port::telemetry
