// Pushes the metrics registry's changes to the BEAM as `metrics` events, so
// the VM keeps every handle's metrics itself (Trellis.Metrics) and a scrape
// never waits on a port (spec/protocol.md section 11).
#pragma once

#include <utility>  // before Asio: GCC 12 needs it for Boost 1.74's headers

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <memory>

#include "frame_writer.h"
#include "telemetry/metrics_delta.h"

namespace trellis::port::telemetry {

// Off until the `metrics_push` op sets an interval: then at most one event
// per interval, and none while nothing changed. `metrics_push` also pushes at
// once (before its reply), and the server pushes once more as the port stops,
// so the last calls' counts reach the VM. Each event carries only what
// changed (MetricsDelta), so its size follows activity, not the registry.
//
// Thread-safety: io thread only. Handlers hold shared_from_this().
class MetricsPump : public std::enable_shared_from_this<MetricsPump> {
 public:
  static constexpr int64_t kMaxIntervalMs = 3'600'000;

  // The pump of this process, made the running one (a port serves one BEAM).
  static std::shared_ptr<MetricsPump> Start(boost::asio::io_context& io,
                                            std::shared_ptr<FrameWriter> out);
  // The running pump, or null outside serving mode (tools, tests).
  static std::shared_ptr<MetricsPump> Running();

  MetricsPump(boost::asio::io_context& io, std::shared_ptr<FrameWriter> out);
  MetricsPump(const MetricsPump&) = delete;
  MetricsPump& operator=(const MetricsPump&) = delete;

  // 0 stops the periodic events; a new interval starts counting now.
  void SetInterval(std::chrono::milliseconds interval);
  // Sends the changes since the last event now, if there are any.
  void PushNow();
  // Sends the last changes and stops the periodic events: the port is ending.
  void Stop();

 private:
  void Schedule();

  std::shared_ptr<FrameWriter> out_;
  boost::asio::steady_timer timer_;
  std::chrono::milliseconds interval_{0};
  uint64_t generation_ = 0;  // a timer armed for an older interval does nothing
  MetricsDelta delta_;
};

}  // namespace trellis::port::telemetry
