// Where the engine's and the port's log lines go while the port serves: an
// spdlog sink that queues each line for the io thread, which sends it to the
// BEAM as a `log` event (spec/protocol.md, "Log lines").
#pragma once

#include <spdlog/sinks/sink.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>

namespace trellis::port::telemetry {

// One line, ready for the wire.
struct LogLine {
  spdlog::level::level_enum level = spdlog::level::info;
  std::string target;    // the logger's name: the engine component, e.g. "trellis::drain"
  std::string instance;  // "<database>/<schema>", or "-" before connect
  std::string message;   // "trellis_instance=<instance> <text>"
  int64_t time_us = 0;   // when it was logged, microseconds since the Unix epoch
  // Lines dropped right after this one, while the queue was full: the reader
  // reports them after sending it, so the warning lands where the gap is.
  uint64_t dropped_after = 0;
};

// A bounded queue of lines. Logging never blocks on the BEAM and never
// allocates without bound: once kQueueLines lines wait, further lines are
// dropped and counted, and the reader reports the count.
//
// Thread-safety: every method may be called from any thread. log() holds a
// mutex only to push one line (formatting happened before, in the logger).
class LogSink final : public spdlog::sinks::sink {
 public:
  static constexpr size_t kQueueLines = 1024;
  // A longer text is cut at this many bytes and marked " [truncated]".
  static constexpr size_t kMaxTextBytes = 8 * 1024;

  LogSink() = default;
  LogSink(const LogSink&) = delete;
  LogSink& operator=(const LogSink&) = delete;

  // spdlog::sinks::sink. The line's text is the logger's formatted payload;
  // the sink's pattern and formatter are not used.
  void log(const spdlog::details::log_msg& msg) override;
  void flush() override {}
  void set_pattern(const std::string&) override {}
  void set_formatter(std::unique_ptr<spdlog::formatter>) override {}

  // The instance every later line names ("-" until set).
  void set_instance(std::string instance);
  std::string instance();

  // Called (from the logging thread, with the sink's mutex held: it must
  // only schedule work, e.g. post to the io thread) when a line arrives and
  // no wake is outstanding. The next Take() that empties the queue re-arms it.
  void set_wake(std::function<void()> wake);

  struct Batch {
    std::deque<LogLine> lines;
    bool more = false;  // lines are still queued (no wake will come for them)
  };
  // Takes up to `max` lines, oldest first.
  Batch Take(size_t max);

 private:
  std::mutex mu_;
  std::deque<LogLine> queue_;   // guarded by mu_
  bool wake_pending_ = false;   // guarded by mu_
  std::string instance_ = "-";  // guarded by mu_
  std::function<void()> wake_;  // guarded by mu_
};

}  // namespace trellis::port::telemetry
