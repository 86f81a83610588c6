#include "log/component_log.h"

#include <mutex>

namespace trellis::log {

std::shared_ptr<spdlog::logger> Component(const std::string& name) {
  static std::mutex mu;
  std::lock_guard lock(mu);
  if (auto existing = spdlog::get(name)) return existing;
  auto logger = spdlog::default_logger()->clone(name);
  spdlog::register_logger(logger);
  return logger;
}

std::string SafeForLog(const Status& status) {
  std::string line(CodeName(status.code()));
  if (status.sqlstate) line += " (SQLSTATE " + *status.sqlstate + ")";
  const bool data_exception = status.sqlstate && status.sqlstate->rfind("22", 0) == 0;
  if (data_exception) return line + ": a data exception (its message quotes a row value)";
  return line + ": " + status.message();
}

}  // namespace trellis::log
