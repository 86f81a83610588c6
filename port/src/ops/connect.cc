// connect: validates the handle's options, creates the session pool, and
// opens and checks the first session. The one op that runs before the handle
// is connected; its admit hook creates the pool the call then runs on, and its
// finish hook keeps the pool (success) or drops it so connect can be retried.
#include <optional>

#include "args.h"
#include "op_registry.h"
#include "ops/server_info.h"
#include "port_context.h"
#include "trellis/protocol/message.h"

namespace trellis::port {
namespace {

constexpr int64_t kMaxPoolSize = 100;
constexpr int64_t kMaxDrainThreads = 100;

Status AdmitConnect(PortContext& port, const protocol::Map& args) {
  HandleConfig config;
  auto url = RequireString(args, "url");
  if (!url.ok()) return url.status();
  if (url.value().empty()) return Status::Validation("argument \"url\" is empty");
  auto schema = OptionalString(args, "schema", "trellis");
  if (!schema.ok()) return schema.status();
  if (schema.value().empty()) return Status::Validation("argument \"schema\" is empty");
  auto application_name = OptionalString(args, "application_name", "trellis");
  if (!application_name.ok()) return application_name.status();
  auto pool_size = OptionalInt(args, "pool_size", 10, 1, kMaxPoolSize);
  if (!pool_size.ok()) return pool_size.status();
  auto staging = OptionalBool(args, "staging", false);
  if (!staging.ok()) return staging.status();
  auto drain_threads = OptionalInt(args, "drain_threads", 0, 0, kMaxDrainThreads);
  if (!drain_threads.ok()) return drain_threads.status();
  auto capture = OptionalString(args, "capture", "triggers");
  if (!capture.ok()) return capture.status();
  if (capture.value() != "triggers" && capture.value() != "logical" && capture.value() != "auto") {
    return Status::Validation("argument \"capture\" must be \"triggers\", \"logical\" or \"auto\"");
  }

  config.options = ConnectOptions{url.value(), schema.value(), application_name.value()};
  config.options.capture_mode = capture.value();
  config.pool_size = pool_size.value();
  config.staging = staging.value();
  config.drain_threads = drain_threads.value();
  return port.BeginConnect(std::move(config));
}

// Runs on the first session the pool opened, which proves the URL works.
Result<protocol::Value> Connect(Session& session, const protocol::Map& args) {
  auto info = session.Info();
  if (!info.ok()) return info.status();
  // The staging worker reads the catalog as it starts: refuse now, with the
  // fix, rather than leave a worker waiting for a catalog nobody creates.
  auto staging = OptionalBool(args, "staging", false);
  std::optional<std::string> capture;
  if (staging.ok() && staging.value()) {
    Status migrated = session.CheckMigrated();
    if (!migrated.ok()) return migrated;
    // The handle that runs staging sets the catalog's capture mode
    // (spec/engine.md "Capture feeds").
    auto mode = session.EnsureCaptureMode();
    if (!mode.ok()) return mode.status();
    capture = mode.value();
  }
  protocol::Map reply = ServerInfoMap(info.value());
  if (capture) reply.emplace_back("capture", *capture);
  reply.emplace_back("protocol",
                     protocol::Array{protocol::kProtocolMajor, protocol::kProtocolMinor});
  return protocol::Value(std::move(reply));
}

void FinishConnect(PortContext& port, const Status& outcome, const protocol::Value* value) {
  std::string instance;
  if (value && value->is_map()) {
    for (const auto& [key, item] : value->as_map()) {
      if (key.is_string() && key.as_string() == "instance" && item.is_string()) {
        instance = item.as_string();
      }
    }
  }
  port.EndConnect(outcome.ok(), instance);
}

Op ConnectOp() {
  Op op = DatabaseOp("connect", Connect);
  op.admit = AdmitConnect;
  op.finish = FinishConnect;
  op.needs_connection = false;
  return op;
}

const OpRegistrar kConnect(ConnectOp());

}  // namespace
}  // namespace trellis::port
