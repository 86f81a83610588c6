// A warning about a condition that lasts, such as a worker that cannot
// connect while the database is down or the role's connection slots are
// full. Logging every retry floods the log (each worker retries every few
// seconds); logging nothing hides the outage. So: one line when the
// condition starts, a reminder with the count of occurrences at a slow
// interval while it lasts, and one line when it clears.
#pragma once

#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace trellis::log {

// Thread-safety: not thread-safe; one per thread that retries (each worker
// keeps its own).
class RecurringWarning {
 public:
  static constexpr std::chrono::seconds kDefaultRemindEvery{60};

  explicit RecurringWarning(std::shared_ptr<spdlog::logger> logger,
                            std::chrono::seconds remind_every = kDefaultRemindEvery);

  // The condition occurred (again); `message` says what happened this time.
  // Logs it as a warning when the condition starts, and as a reminder with
  // the count once `remind_every` has passed since the last line.
  void Occurred(std::string_view message);

  // The condition is over: logs `message` with the number of occurrences
  // and how long it lasted, once, if it had occurred. Cheap otherwise.
  void Cleared(std::string_view message);

  bool active() const { return occurrences_ > 0; }

 private:
  using Clock = std::chrono::steady_clock;

  std::shared_ptr<spdlog::logger> logger_;
  const std::chrono::seconds remind_every_;
  int64_t occurrences_ = 0;      // since the condition started
  int64_t since_last_line_ = 0;  // occurrences not logged since the last line
  Clock::time_point started_;
  Clock::time_point last_line_;
};

}  // namespace trellis::log
