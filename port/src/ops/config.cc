// config: the handle's options as connect fixed them, the URL's password
// redacted.
#include "op_registry.h"
#include "port_context.h"

namespace trellis::port {
namespace {

Result<protocol::Value> Config(PortContext& port, const protocol::Map&) {
  const HandleConfig* config = port.config();
  if (!port.connected() || !config) {
    return Status::Validation("not connected: call connect first");
  }
  return protocol::Value(protocol::MakeMap({
      {"url", RedactUrl(config->options.url)},
      {"schema", config->options.schema},
      {"application_name", config->options.application_name},
      {"pool_size", config->pool_size},
      {"staging", config->staging},
      {"drain_threads", config->drain_threads},
      {"capture", config->options.capture_mode},
  }));
}

const OpRegistrar kConfig(InlineOp("config", Config));

}  // namespace
}  // namespace trellis::port
