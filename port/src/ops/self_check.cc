// Self-check ops: self_check starts (or returns) a target's job,
// self_check_job reads one back (spec/protocol.md section 8).
#include "args.h"
#include "op_registry.h"
#include "ops/engine_values.h"

namespace trellis::port {
namespace {

Result<protocol::Value> SelfCheckOp(Session& session, const protocol::Map& args) {
  auto target = RequireString(args, "target");
  if (!target.ok()) return target.status();
  SelfCheckRequest request;
  auto mode = OptionalString(args, "mode", "full");
  if (!mode.ok()) return mode.status();
  request.mode = mode.value();
  if (const protocol::Value* size = FindArg(args, "sample_size"); size && !size->is_nil()) {
    auto value = RequireInt(args, "sample_size");
    if (!value.ok()) return value.status();
    request.sample_size = value.value();
  }
  auto job = session.StartSelfCheck(target.value(), request);
  if (!job.ok()) return job.status();
  return ToValue(job.value());
}

Result<protocol::Value> SelfCheckJobOp(Session& session, const protocol::Map& args) {
  auto id = RequireInt(args, "id", 1);
  if (!id.ok()) return id.status();
  auto job = session.ReadSelfCheckJob(id.value());
  if (!job.ok()) return job.status();
  if (!job.value()) return protocol::Value();
  return ToValue(*job.value());
}

const OpRegistrar kSelfCheck(DatabaseOp("self_check", SelfCheckOp));
const OpRegistrar kSelfCheckJob(DatabaseOp("self_check_job", SelfCheckJobOp));

}  // namespace
}  // namespace trellis::port
