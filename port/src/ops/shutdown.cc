// shutdown: replies nil, then the port ends every other call ("the handle was
// shut down"), cancels running statements and exits 0 (see Server::Stop).
#include "op_registry.h"
#include "port_context.h"

namespace trellis::port {
namespace {

Result<protocol::Value> Shutdown(PortContext& port, const protocol::Map&) {
  port.RequestShutdown();
  return protocol::Value();
}

const OpRegistrar kShutdown(InlineOp("shutdown", Shutdown));

}  // namespace
}  // namespace trellis::port
