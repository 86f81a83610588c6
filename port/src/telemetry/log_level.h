// Log level names as the protocol spells them (spec/protocol.md, "Log
// lines"): debug, info, warning, error, critical, and off for "send nothing".
#pragma once

#include <spdlog/common.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace trellis::port::telemetry {

// The wire name of a line's level: spdlog's trace and debug are "debug", its
// warn is "warning", err is "error".
std::string_view WireLevelName(spdlog::level::level_enum level);

// The spdlog threshold for a wire level name (off included); nullopt for an
// unknown name.
std::optional<spdlog::level::level_enum> ParseWireLevel(std::string_view name);

// The names a line's level may have, most verbose first (for hello).
const std::vector<std::string>& WireLevelNames();

// "debug, info, warning, error, critical or off", for error messages.
std::string ThresholdChoices();

}  // namespace trellis::port::telemetry
