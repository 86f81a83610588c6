#include "frame_writer.h"

#include <spdlog/spdlog.h>

#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>

#include "telemetry/series.h"
#include "trellis/protocol/codec.h"
#include "trellis/protocol/frame.h"

namespace trellis::port {

namespace asio = boost::asio;

FrameWriter::FrameWriter(asio::io_context& io, int fd, CaptureWriter* capture)
    : fd_(io, fd), capture_(capture) {}

bool FrameWriter::Send(const protocol::Message& message) {
  if (failed_) return false;
  const std::string body = protocol::EncodeMessage(message);
  if (body.size() > protocol::kMaxFrameBytes) return false;
  if (capture_) capture_->Record(Direction::kOut, body);
  // {packet, 4}: the length prefix is big-endian.
  const auto length = static_cast<uint32_t>(body.size());
  const char header[protocol::kFrameHeaderBytes] = {
      static_cast<char>(length >> 24), static_cast<char>(length >> 16),
      static_cast<char>(length >> 8), static_cast<char>(length)};
  queued_.append(header, sizeof header);
  queued_.append(body);
  static telemetry::Counter& frames_out = telemetry::kFrames.With({"out"});
  static telemetry::Counter& bytes_out = telemetry::kBytes.With({"out"});
  frames_out.Add();
  bytes_out.Add(sizeof header + body.size());
  if (!in_flight_) StartWrite();
  return true;
}

void FrameWriter::Flush(std::function<void()> done) {
  flush_waiters_.push_back(std::move(done));
  if (!in_flight_) NotifyFlushed();
}

void FrameWriter::StartWrite() {
  writing_.clear();
  writing_.swap(queued_);
  in_flight_ = true;
  asio::async_write(fd_, asio::buffer(writing_),
                    [self = shared_from_this()](const boost::system::error_code& error,
                                                size_t /*written*/) { self->OnWritten(error); });
}

void FrameWriter::OnWritten(const boost::system::error_code& error) {
  in_flight_ = false;
  writing_.clear();
  if (error) {
    if (!failed_) {
      failed_ = true;
      spdlog::info("the output fd closed ({}): the BEAM is gone", error.message());
      queued_.clear();
      if (on_failure_) on_failure_();
    }
    NotifyFlushed();
    return;
  }
  if (!queued_.empty()) {
    StartWrite();
  } else {
    NotifyFlushed();
  }
  if (on_written_) on_written_();
}

void FrameWriter::NotifyFlushed() {
  if (flush_waiters_.empty()) return;
  std::vector<std::function<void()>> waiters;
  waiters.swap(flush_waiters_);
  // Posted, so a waiter never runs inside Send()'s or Flush()'s caller.
  for (auto& waiter : waiters) asio::post(fd_.get_executor(), std::move(waiter));
}

}  // namespace trellis::port
