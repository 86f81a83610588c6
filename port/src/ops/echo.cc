// echo {"value": any}: that value back. Tests and benchmarks route many
// concurrent calls with it and check each caller got its own value.
#include "args.h"
#include "op_registry.h"

namespace trellis::port {
namespace {

Result<protocol::Value> Echo(PortContext&, const protocol::Map& args) {
  return RequireValue(args, "value");
}

const OpRegistrar kEcho(InlineOp("echo", Echo));

}  // namespace
}  // namespace trellis::port
