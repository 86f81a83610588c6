#include "hello.h"

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
  protocol::Map enums = protocol::MakeMap({
      {"status", Strings({"waiting_to_backfill", "backfilling", "catching_up", "live", "paused"})},
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
