// metrics: a snapshot of the port's metrics registry (telemetry/series.cc).
// metrics_push: the registry's changes as `metrics` events, now and then
// periodically, which is how Trellis.Metrics keeps its registry in the VM.
// Both inline: they only read atomics.
#include "telemetry/metrics.h"
#include "args.h"
#include "op_registry.h"
#include "port_context.h"
#include "telemetry/metrics_pump.h"
#include "telemetry/metrics_wire.h"

namespace trellis::port {
namespace {

Result<protocol::Value> Metrics(PortContext& port, const protocol::Map&) {
  const HandleConfig* config = port.config();
  protocol::Value instance =
      port.connected() && config ? protocol::Value(config->instance) : protocol::Value();
  return protocol::Value(protocol::MakeMap(
      {{"instance", std::move(instance)},
       {"families", telemetry::FamiliesValue(telemetry::Registry::Global().Snapshot())}}));
}

Result<protocol::Value> MetricsPush(PortContext&, const protocol::Map& args) {
  auto pump = telemetry::MetricsPump::Running();
  if (!pump) return Status::Validation("metrics_push: the port is not serving");
  // Absent or nil: the interval stays as it is.
  const protocol::Value* given = FindArg(args, "interval_ms");
  if (given && !given->is_nil()) {
    auto interval = RequireInt(args, "interval_ms", 0, telemetry::MetricsPump::kMaxIntervalMs);
    if (!interval.ok()) return interval.status();
    pump->SetInterval(std::chrono::milliseconds(interval.value()));
  }
  // The event goes out before this call's reply.
  pump->PushNow();
  return protocol::Value();
}

const OpRegistrar kMetrics(InlineOp("metrics", Metrics));
const OpRegistrar kMetricsPush(InlineOp("metrics_push", MetricsPush));

}  // namespace
}  // namespace trellis::port
