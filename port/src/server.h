// The port's run loop: reads frames from fd 3, hands them to the Dispatcher,
// and owns the way out (shutdown op, EOF, SIGTERM/SIGINT, framing lost).
#pragma once

#include <utility>  // before Asio: GCC 12 needs it for Boost 1.74's headers

#include <array>
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <memory>
#include <string>

#include "capture.h"
#include "dispatcher.h"
#include "frame_writer.h"
#include "telemetry/log_pump.h"
#include "telemetry/log_sink.h"
#include "telemetry/metrics_pump.h"
#include "trellis/protocol/codec.h"
#include "trellis/protocol/frame.h"

namespace trellis::port {

// Exit statuses of the port mode (spec/protocol.md section 8).
inline constexpr int kExitOk = 0;           // shutdown op, EOF on fd 3, SIGTERM/SIGINT
inline constexpr int kExitStartFailed = 1;  // fds 3/4 not usable, capture file not writable
inline constexpr int kExitUsage = 2;        // bad command line
inline constexpr int kExitFramingLost = 3;  // a length prefix over the frame limit

// Thread-safety: io thread only. Handlers hold shared_from_this().
class Server : public std::enable_shared_from_this<Server> {
 public:
  // The whole way out must fit in this (the BEAM may wait on us to exit).
  static constexpr std::chrono::milliseconds kExitBudget{900};
  // Of which writing the last frames may take this much.
  static constexpr std::chrono::milliseconds kFlushBudget{500};

  // Adopts `in_fd` and `out_fd`. `capture` may be null. `log_sink` (may be
  // null) is the sink of the process's loggers: its lines go out as `log`
  // events.
  Server(boost::asio::io_context& io, int in_fd, int out_fd, std::unique_ptr<CaptureWriter> capture,
         std::shared_ptr<telemetry::LogSink> log_sink);
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Sends hello, then serves until the process exits (through std::_Exit:
  // worker threads stuck in libpq are never waited for).
  void Start();

 private:
  void ReadSome();
  void OnRead(const boost::system::error_code& error, size_t bytes);
  void HandleBody(const std::string& body);
  void Record(const std::string& body,
              const std::variant<protocol::Message, protocol::DecodeError>& decoded);
  void SendErrorEvent(const std::string& message);
  // Ends the process with `status`: stops reading, ends every call (answered
  // with `answer` when set), flushes fd 4, sends the cancels, exits.
  void Stop(int status, std::optional<Status> answer, const std::string& why);
  void Exit();

  boost::asio::io_context& io_;
  boost::asio::posix::stream_descriptor in_;
  std::unique_ptr<CaptureWriter> capture_;
  std::shared_ptr<FrameWriter> out_;
  std::shared_ptr<Dispatcher> dispatcher_;
  std::shared_ptr<telemetry::LogPump> log_pump_;  // null without a sink
  std::shared_ptr<telemetry::MetricsPump> metrics_pump_;
  boost::asio::signal_set signals_;
  boost::asio::steady_timer exit_timer_;
  protocol::FrameReader reader_;
  std::array<char, 64 * 1024> read_buffer_;
  bool stopping_ = false;
  bool exited_ = false;
  int exit_status_ = kExitOk;
  std::chrono::steady_clock::time_point exit_deadline_;
};

}  // namespace trellis::port
