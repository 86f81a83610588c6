// The map that `connect` and `server_info` reply with.
#pragma once

#include "trellis/engine.h"
#include "trellis/protocol/value.h"

namespace trellis::port {

// {"instance", "server_version", "engine_version"}.
protocol::Map ServerInfoMap(const ServerInfo& info);

}  // namespace trellis::port
