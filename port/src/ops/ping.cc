// ping: "pong", answered on the io thread with no database work. The runtime
// benchmark measures the port's per-call cost with it, so keep it trivial.
#include "op_registry.h"

namespace trellis::port {
namespace {

Result<protocol::Value> Ping(PortContext&, const protocol::Map&) { return protocol::Value("pong"); }

const OpRegistrar kPing(InlineOp("ping", Ping));

}  // namespace
}  // namespace trellis::port
