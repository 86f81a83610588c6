// server_info: the instance name and the server's and engine's versions.
#include "ops/server_info.h"

#include "op_registry.h"

namespace trellis::port {

protocol::Map ServerInfoMap(const ServerInfo& info) {
  return protocol::MakeMap({
      {"instance", info.instance},
      {"server_version", info.server_version},
      {"engine_version", info.engine_version},
  });
}

namespace {

Result<protocol::Value> ServerInfoOp(Session& session, const protocol::Map&) {
  auto info = session.Info();
  if (!info.ok()) return info.status();
  return protocol::Value(ServerInfoMap(info.value()));
}

const OpRegistrar kServerInfo(DatabaseOp("server_info", ServerInfoOp));

}  // namespace
}  // namespace trellis::port
