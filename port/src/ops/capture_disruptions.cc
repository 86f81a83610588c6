// detect_capture_disruptions: pause now the readers of every table whose
// capture was changed outside Trellis, and name those tables.
#include "op_registry.h"

namespace trellis::port {
namespace {

Result<protocol::Value> DetectCaptureDisruptionsOp(Session& session, const protocol::Map&) {
  auto tables = session.DetectCaptureDisruptions();
  if (!tables.ok()) return tables.status();
  protocol::Array out;
  for (const auto& table : tables.value()) out.push_back(protocol::Value(table));
  return protocol::Value(std::move(out));
}

const OpRegistrar kDetectCaptureDisruptions(DatabaseOp("detect_capture_disruptions",
                                                       DetectCaptureDisruptionsOp));

}  // namespace
}  // namespace trellis::port
