// Fleet and convergence ops: has_live_drain_workers, has_live_staging_worker,
// watermark_token, await_converged.
#include "args.h"
#include "op_registry.h"

namespace trellis::port {
namespace {

// await_converged's own bound; the call's budget (timeout_ms of the request)
// must be larger for the answer "not converged" to arrive as a value.
constexpr int64_t kMaxAwaitMs = 24 * 3600 * 1000;

Result<protocol::Value> HasLiveDrainWorkersOp(Session& session, const protocol::Map&) {
  auto live = session.HasLiveDrainWorkers();
  if (!live.ok()) return live.status();
  return protocol::Value(live.value());
}

Result<protocol::Value> HasLiveStagingWorkerOp(Session& session, const protocol::Map&) {
  auto live = session.HasLiveStagingWorker();
  if (!live.ok()) return live.status();
  return protocol::Value(live.value());
}

Result<protocol::Value> WatermarkTokenOp(Session& session, const protocol::Map&) {
  auto token = session.WatermarkToken();
  if (!token.ok()) return token.status();
  return protocol::Value(protocol::Binary{token.value()});
}

Result<protocol::Value> AwaitConvergedOp(Session& session, const protocol::Map& args) {
  const protocol::Value* token = FindArg(args, "token");
  if (!token || !token->is_binary()) {
    return Status::Validation(
        "argument \"token\" must be a binary: pass back what watermark_token returned");
  }
  auto timeout = RequireInt(args, "timeout_ms", 0, kMaxAwaitMs);
  if (!timeout.ok()) return timeout.status();
  auto converged =
      session.AwaitConverged(token->as_binary().bytes, std::chrono::milliseconds(timeout.value()));
  if (!converged.ok()) return converged.status();
  return protocol::Value(converged.value());
}

const OpRegistrar kHasLiveDrainWorkers(DatabaseOp("has_live_drain_workers", HasLiveDrainWorkersOp));
const OpRegistrar kHasLiveStagingWorker(DatabaseOp("has_live_staging_worker",
                                                   HasLiveStagingWorkerOp));
const OpRegistrar kWatermarkToken(DatabaseOp("watermark_token", WatermarkTokenOp));
const OpRegistrar kAwaitConverged(DatabaseOp("await_converged", AwaitConvergedOp));

}  // namespace
}  // namespace trellis::port
