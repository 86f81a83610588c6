#include "telemetry/log_sink.h"

#include <chrono>

#include "telemetry/series.h"

namespace trellis::port::telemetry {
namespace {

// Cuts `text` to at most `max` bytes without splitting a UTF-8 sequence.
std::string_view CutUtf8(std::string_view text, size_t max) {
  if (text.size() <= max) return text;
  size_t end = max;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  return text.substr(0, end);
}

}  // namespace

void LogSink::log(const spdlog::details::log_msg& msg) {
  if (msg.level == spdlog::level::off) return;
  const std::string_view payload(msg.payload.data(), msg.payload.size());
  const std::string_view text = CutUtf8(payload, kMaxTextBytes);
  const int64_t time_us =
      std::chrono::duration_cast<std::chrono::microseconds>(msg.time.time_since_epoch()).count();

  static Counter& dropped = kLogLinesDropped.Get();
  std::lock_guard lock(mu_);
  if (queue_.size() >= kQueueLines) {
    ++queue_.back().dropped_after;
    dropped.Add();
    return;
  }
  LogLine& line = queue_.emplace_back();
  line.level = msg.level;
  line.target.assign(msg.logger_name.data(), msg.logger_name.size());
  line.instance = instance_;
  line.message.reserve(17 + instance_.size() + 1 + text.size());
  line.message.append("trellis_instance=").append(instance_).append(" ").append(text);
  if (text.size() < payload.size()) line.message.append(" [truncated]");
  line.time_us = time_us;
  if (!wake_pending_ && wake_) {
    wake_pending_ = true;
    wake_();
  }
}

void LogSink::set_instance(std::string instance) {
  std::lock_guard lock(mu_);
  instance_ = std::move(instance);
}

void LogSink::set_wake(std::function<void()> wake) {
  std::lock_guard lock(mu_);
  wake_ = std::move(wake);
  if (!queue_.empty() && wake_ && !wake_pending_) {
    wake_pending_ = true;
    wake_();
  }
}

std::string LogSink::instance() {
  std::lock_guard lock(mu_);
  return instance_;
}

LogSink::Batch LogSink::Take(size_t max) {
  Batch batch;
  std::lock_guard lock(mu_);
  if (queue_.size() <= max) {
    batch.lines.swap(queue_);
  } else {
    for (size_t i = 0; i < max; ++i) {
      batch.lines.push_back(std::move(queue_.front()));
      queue_.pop_front();
    }
  }
  batch.more = !queue_.empty();
  if (!batch.more) wake_pending_ = false;
  return batch;
}

}  // namespace trellis::port::telemetry
