// Moves queued log lines from the LogSink to the BEAM as `log` events.
#pragma once

#include <utility>  // before Asio: GCC 12 needs it for Boost 1.74's headers

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstddef>
#include <memory>

#include "frame_writer.h"
#include "telemetry/log_sink.h"

namespace trellis::port::telemetry {

// Runs on the io thread. Lines never pile up ahead of replies: the pump sends
// at most kLinesPerSecond (bursts of up to kBurstLines), and only while less
// than kMaxPendingBytes of output wait to be written (the BEAM reads fd 4
// fast enough). Otherwise lines wait in the sink's bounded queue, where the
// overflow is dropped; a warning line then says how many were dropped.
// Replies are never held back: they go straight to the FrameWriter.
//
// Why a rate: a storm of debug lines would otherwise cost the VM a message
// per line in the handle's owner, the process that routes every reply, and
// Logger takes far fewer lines per second than the engine can produce.
//
// Thread-safety: io thread only (the sink's wake posts here). Handlers hold
// shared_from_this().
class LogPump : public std::enable_shared_from_this<LogPump> {
 public:
  static constexpr size_t kMaxPendingBytes = 64 * 1024;
  static constexpr size_t kBatchLines = 256;
  static constexpr double kLinesPerSecond = 10'000;
  static constexpr double kBurstLines = 1024;

  LogPump(boost::asio::io_context& io, std::shared_ptr<LogSink> sink,
          std::shared_ptr<FrameWriter> out);
  LogPump(const LogPump&) = delete;
  LogPump& operator=(const LogPump&) = delete;

  // Starts taking lines (those queued before are sent first). REQUIRES: the
  // FrameWriter's on_written hook is this pump's OnWritten().
  void Start();
  // Called by the FrameWriter after each completed write.
  void OnWritten();
  // Sends every queued line now, whatever the output backlog: the port is
  // stopping and will flush fd 4 once.
  void SendAll();

 private:
  void Pump();
  // Lines the rate allows now (refills the bucket first).
  size_t Allowance();
  void WaitForTokens();
  void Send(const LogLine& line);
  void SendDropWarning(uint64_t dropped);

  boost::asio::io_context& io_;
  std::shared_ptr<LogSink> sink_;
  std::shared_ptr<FrameWriter> out_;
  boost::asio::steady_timer rate_timer_;
  bool waiting_for_writer_ = false;
  bool waiting_for_tokens_ = false;
  double tokens_ = kBurstLines;
  std::chrono::steady_clock::time_point refilled_ = std::chrono::steady_clock::now();
};

}  // namespace trellis::port::telemetry
