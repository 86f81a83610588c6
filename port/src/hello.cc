#include "hello.h"

#include "telemetry/log_level.h"
#include "trellis/engine.h"

namespace trellis::port {
namespace {

protocol::Array Strings(std::initializer_list<const char*> items) {
  protocol::Array array;
  for (const char* item : items) array.emplace_back(item);
  return array;
}

}  // namespace

protocol::Event HelloEvent() {
  protocol::Array error_codes;
  for (const auto& code : protocol::ErrorCodes()) error_codes.emplace_back(code);
  protocol::Array log_levels;
  for (const auto& level : telemetry::WireLevelNames()) log_levels.emplace_back(level);
  protocol::Map enums = protocol::MakeMap({
      {"status", Strings({"waiting_to_backfill", "backfilling", "catching_up", "live", "paused"})},
      {"paused_kind", Strings({"operator", "disruption", "schema_change", "failure"})},
      {"column_state", Strings({"live", "paused"})},
      {"log_level", std::move(log_levels)},
      {"metric_type", Strings({"counter", "gauge", "histogram"})},
  });
  return protocol::Event{
      "hello",
      protocol::MakeMap({
          {"protocol", protocol::Array{protocol::kProtocolMajor, protocol::kProtocolMinor}},
          {"engine_version", std::string(kEngineVersion)},
          {"error_codes", std::move(error_codes)},
          {"enums", std::move(enums)},
      })};
}

}  // namespace trellis::port
