#include "hello.h"

#include "telemetry/log_level.h"
#include "trellis/engine.h"
#include "trellis/states.h"

namespace trellis::port {
namespace {

protocol::Array Strings(std::initializer_list<const char*> items) {
  protocol::Array array;
  for (const char* item : items) array.emplace_back(item);
  return array;
}

// Every wire name of a state enum (trellis/states.h), in its order.
template <typename E>
protocol::Array WireNamesOf() {
  protocol::Array array;
  for (std::string_view name : WireNames<E>::kNames) array.emplace_back(std::string(name));
  return array;
}

}  // namespace

protocol::Event HelloEvent() {
  protocol::Array error_codes;
  for (const auto& code : protocol::ErrorCodes()) error_codes.emplace_back(code);
  protocol::Array log_levels;
  for (const auto& level : telemetry::WireLevelNames()) log_levels.emplace_back(level);
  protocol::Map enums = protocol::MakeMap({
      {"status", WireNamesOf<TransformState>()},
      {"paused_kind", WireNamesOf<PauseKind>()},
      {"column_state", WireNamesOf<ColumnState>()},
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
