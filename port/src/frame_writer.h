// Writes frames to the port's output fd (fd 4).
#pragma once

#include <utility>  // before Asio: GCC 12 needs it for Boost 1.74's headers

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "capture.h"
#include "trellis/protocol/message.h"

namespace trellis::port {

// One async write in flight at a time; frames sent meanwhile are appended to
// a second buffer and go out together in the next write, so a burst of
// replies costs one syscall and the two buffers are reused (no allocation per
// frame once they have grown).
//
// Thread-safety: io thread only. Handlers hold shared_from_this().
class FrameWriter : public std::enable_shared_from_this<FrameWriter> {
 public:
  // `fd` is adopted (closed with the writer). `capture` may be null and must
  // outlive the writer.
  FrameWriter(boost::asio::io_context& io, int fd, CaptureWriter* capture);
  FrameWriter(const FrameWriter&) = delete;
  FrameWriter& operator=(const FrameWriter&) = delete;

  // Encodes and queues a message. False when the body is over the frame
  // limit (nothing is sent) or the fd has failed.
  bool Send(const protocol::Message& message);

  // Calls `done` (on the io thread) once everything queued so far is written
  // or the fd has failed.
  void Flush(std::function<void()> done);

  // Called once when a write fails (the BEAM closed its end).
  void set_on_failure(std::function<void()> on_failure) { on_failure_ = std::move(on_failure); }
  // Called after each write that completed (the log pump resumes on it).
  void set_on_written(std::function<void()> on_written) { on_written_ = std::move(on_written); }

  bool failed() const { return failed_; }
  // Bytes queued or being written: how far the BEAM is behind.
  size_t pending_bytes() const { return queued_.size() + writing_.size(); }

 private:
  void StartWrite();
  void OnWritten(const boost::system::error_code& error);
  void NotifyFlushed();

  boost::asio::posix::stream_descriptor fd_;
  CaptureWriter* capture_;
  std::string queued_;   // frames waiting for the next write
  std::string writing_;  // the frames of the write in flight
  bool in_flight_ = false;
  bool failed_ = false;
  std::vector<std::function<void()>> flush_waiters_;
  std::function<void()> on_failure_;
  std::function<void()> on_written_;
};

}  // namespace trellis::port
