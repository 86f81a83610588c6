// The engine's loggers: one spdlog logger per component, named
// "trellis::<component>" (the name travels with every line as its target).
// Each is created on first use from the default logger's sinks and level, and
// registered, so spdlog::set_level() reaches it. The host (the port program)
// installs its default logger before any engine code runs.
#pragma once

#include <spdlog/spdlog.h>

#include <memory>
#include <string>

#include "trellis/status.h"

namespace trellis::log {

// REQUIRES: `name` is a component's full name, e.g. "trellis::drain".
// Thread-safe. Callers keep the result (a function-local static is enough).
std::shared_ptr<spdlog::logger> Component(const std::string& name);

// A failure as a log line may show it at info and above: its code, SQLSTATE
// and message, except that the message of a data exception (SQLSTATE class
// 22, e.g. invalid input syntax for a value) is left out, because PostgreSQL
// quotes the offending row value in it. Log the full message at debug level.
std::string SafeForLog(const Status& status);

}  // namespace trellis::log
