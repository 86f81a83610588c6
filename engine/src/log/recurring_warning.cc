#include "log/recurring_warning.h"

namespace trellis::log {
namespace {

int64_t SecondsBetween(std::chrono::steady_clock::time_point from,
                       std::chrono::steady_clock::time_point to) {
  return std::chrono::duration_cast<std::chrono::seconds>(to - from).count();
}

}  // namespace

RecurringWarning::RecurringWarning(std::shared_ptr<spdlog::logger> logger,
                                   std::chrono::seconds remind_every)
    : logger_(std::move(logger)), remind_every_(remind_every) {}

void RecurringWarning::Occurred(std::string_view message) {
  const Clock::time_point now = Clock::now();
  ++occurrences_;
  if (occurrences_ == 1) {
    started_ = now;
    last_line_ = now;
    since_last_line_ = 0;
    logger_->warn("{} (retrying; a reminder follows every {} s while this lasts)", message,
                  remind_every_.count());
    return;
  }
  ++since_last_line_;
  if (now - last_line_ < remind_every_) return;
  logger_->warn("still failing: {} times in the last {} s ({} s in all): {}", since_last_line_,
                SecondsBetween(last_line_, now), SecondsBetween(started_, now), message);
  last_line_ = now;
  since_last_line_ = 0;
}

void RecurringWarning::Cleared(std::string_view message) {
  if (occurrences_ == 0) return;
  logger_->info("{} after {} failed attempts over {} s", message, occurrences_,
                SecondsBetween(started_, Clock::now()));
  occurrences_ = 0;
  since_last_line_ = 0;
}

}  // namespace trellis::log
