#include "telemetry/log_pump.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <chrono>

#include "telemetry/log_level.h"
#include "telemetry/series.h"

namespace trellis::port::telemetry {

namespace asio = boost::asio;

namespace {

// The counter of lines sent at `level`, looked up once per level.
Counter& LinesSent(spdlog::level::level_enum level) {
  static Counter* const counters[] = {
      &kLogLines.With({"debug"}),   &kLogLines.With({"debug"}), &kLogLines.With({"info"}),
      &kLogLines.With({"warning"}), &kLogLines.With({"error"}), &kLogLines.With({"critical"}),
  };
  const size_t i = static_cast<size_t>(level);
  return *counters[i < std::size(counters) ? i : std::size(counters) - 1];
}

}  // namespace

LogPump::LogPump(asio::io_context& io, std::shared_ptr<LogSink> sink,
                 std::shared_ptr<FrameWriter> out)
    : io_(io), sink_(std::move(sink)), out_(std::move(out)), rate_timer_(io) {}

void LogPump::Start() {
  std::weak_ptr<LogPump> weak = weak_from_this();
  auto executor = io_.get_executor();
  sink_->set_wake([weak, executor] {
    asio::post(executor, [weak] {
      if (auto self = weak.lock()) self->Pump();
    });
  });
}

void LogPump::OnWritten() {
  if (waiting_for_writer_ && out_->pending_bytes() < kMaxPendingBytes) {
    waiting_for_writer_ = false;
    Pump();
  }
}

void LogPump::Pump() {
  // One resume at a time: a wake, a completed write or the rate timer.
  if (waiting_for_writer_ || waiting_for_tokens_) return;
  for (;;) {
    if (out_->pending_bytes() >= kMaxPendingBytes) {
      // The rest stays queued (and overflows there) until writes complete.
      waiting_for_writer_ = true;
      return;
    }
    const size_t allowed = Allowance();
    if (allowed == 0) {
      WaitForTokens();
      return;
    }
    LogSink::Batch batch = sink_->Take(std::min(allowed, kBatchLines));
    tokens_ -= static_cast<double>(batch.lines.size());
    for (const LogLine& line : batch.lines) Send(line);
    if (!batch.more) return;
  }
}

size_t LogPump::Allowance() {
  const auto now = std::chrono::steady_clock::now();
  const double elapsed = std::chrono::duration<double>(now - refilled_).count();
  refilled_ = now;
  tokens_ = std::min(kBurstLines, tokens_ + elapsed * kLinesPerSecond);
  return tokens_ >= 1 ? static_cast<size_t>(tokens_) : 0;
}

void LogPump::WaitForTokens() {
  // Long enough for a batch worth sending, short enough to stay smooth.
  constexpr auto kWait = std::chrono::milliseconds(10);
  waiting_for_tokens_ = true;
  rate_timer_.expires_after(kWait);
  rate_timer_.async_wait([self = shared_from_this()](const boost::system::error_code& error) {
    self->waiting_for_tokens_ = false;
    if (!error) self->Pump();
  });
}

void LogPump::SendAll() {
  for (;;) {
    LogSink::Batch batch = sink_->Take(kBatchLines);
    for (const LogLine& line : batch.lines) Send(line);
    if (!batch.more) return;
  }
}

void LogPump::Send(const LogLine& line) {
  const std::string_view level = WireLevelName(line.level);
  protocol::Event event{"log", protocol::MakeMap({
                                   {"level", level},
                                   {"target", line.target},
                                   {"instance", line.instance},
                                   {"message", line.message},
                                   {"time_us", line.time_us},
                               })};
  if (out_->Send(event)) LinesSent(line.level).Add();
  if (line.dropped_after > 0) SendDropWarning(line.dropped_after);
}

void LogPump::SendDropWarning(uint64_t dropped) {
  // A handle that asked for errors only gets none of this.
  if (!spdlog::default_logger()->should_log(spdlog::level::warn)) return;
  // Built here rather than logged: a line about dropped lines must not queue
  // behind them, or be dropped itself.
  LogLine line;
  line.level = spdlog::level::warn;
  line.target = spdlog::default_logger()->name();
  line.instance = sink_->instance();
  line.message = "trellis_instance=" + line.instance + " dropped " + std::to_string(dropped) +
                 " log line(s): the BEAM did not read them in time";
  line.time_us = std::chrono::duration_cast<std::chrono::microseconds>(
                     std::chrono::system_clock::now().time_since_epoch())
                     .count();
  Send(line);
}

}  // namespace trellis::port::telemetry
