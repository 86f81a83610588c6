#include "telemetry/metrics_pump.h"

#include "telemetry/metrics_wire.h"

namespace trellis::port::telemetry {
namespace {

// Io thread only, like the pump.
std::weak_ptr<MetricsPump>& RunningSlot() {
  static std::weak_ptr<MetricsPump> running;
  return running;
}

}  // namespace

std::shared_ptr<MetricsPump> MetricsPump::Start(boost::asio::io_context& io,
                                                std::shared_ptr<FrameWriter> out) {
  auto pump = std::make_shared<MetricsPump>(io, std::move(out));
  RunningSlot() = pump;
  return pump;
}

std::shared_ptr<MetricsPump> MetricsPump::Running() { return RunningSlot().lock(); }

MetricsPump::MetricsPump(boost::asio::io_context& io, std::shared_ptr<FrameWriter> out)
    : out_(std::move(out)), timer_(io) {}

void MetricsPump::SetInterval(std::chrono::milliseconds interval) {
  interval_ = interval;
  ++generation_;
  timer_.cancel();
  Schedule();
}

void MetricsPump::Schedule() {
  if (interval_.count() <= 0) return;
  timer_.expires_after(interval_);
  timer_.async_wait([self = shared_from_this(),
                     generation = generation_](const boost::system::error_code& error) {
    if (error || generation != self->generation_) return;
    self->PushNow();
    self->Schedule();
  });
}

void MetricsPump::PushNow() {
  auto changes = delta_.Take(Registry::Global().Snapshot());
  if (changes.empty()) return;
  out_->Send(protocol::Event{
      "metrics", protocol::MakeMap({{"families", protocol::Value(FamiliesValue(changes))}})});
}

void MetricsPump::Stop() {
  if (interval_.count() > 0) PushNow();
  SetInterval(std::chrono::milliseconds(0));
}

}  // namespace trellis::port::telemetry
