// `trellis-port decode FILE`: a capture as one readable line per frame.
//
//   +   12.345 ms  in   request id=3 connect {"url": "postgres://u:***@h/db"} timeout_ms=500
//   +   20.001 ms  out  reply   id=3 ok {"instance": "db/trellis", ...}
//   +   21.000 ms  in   cancel  id=4
//   +    0.010 ms  out  event   hello {"protocol": [1, 0], ...}
//   +   30.000 ms  in   invalid (5 bytes) truncated: ...
#include <cstdio>
#include <string>

#include "capture.h"
#include "tools/tools.h"
#include "trellis/protocol/codec.h"

namespace trellis::port {
namespace {

protocol::Value ErrorValue(const protocol::ErrorInfo& error) {
  protocol::Map map = protocol::MakeMap({{"code", error.code}, {"message", error.message}});
  if (error.sqlstate) map.emplace_back("sqlstate", *error.sqlstate);
  if (error.detail) map.emplace_back("detail", *error.detail);
  if (error.hint) map.emplace_back("hint", *error.hint);
  return map;
}

std::string Describe(const std::string& body) {
  auto decoded = protocol::DecodeMessage(body);
  if (auto* error = std::get_if<protocol::DecodeError>(&decoded)) {
    return "invalid (" + std::to_string(body.size()) + " bytes) " + error->message;
  }
  const auto& message = std::get<protocol::Message>(decoded);
  if (auto* request = std::get_if<protocol::Request>(&message)) {
    std::string line = "request id=" + std::to_string(request->call_id) + " " + request->op + " " +
                       protocol::ToDisplayString(request->args);
    if (request->timeout_ms) line += " timeout_ms=" + std::to_string(*request->timeout_ms);
    return line;
  }
  if (auto* reply = std::get_if<protocol::Reply>(&message)) {
    std::string line = "reply   id=" + std::to_string(reply->call_id) + " ";
    if (reply->ok())
      return line + "ok " + protocol::ToDisplayString(std::get<protocol::Value>(reply->result));
    return line + "error " +
           protocol::ToDisplayString(ErrorValue(std::get<protocol::ErrorInfo>(reply->result)));
  }
  if (auto* cancel = std::get_if<protocol::Cancel>(&message)) {
    return "cancel  id=" + std::to_string(cancel->call_id);
  }
  const auto& event = std::get<protocol::Event>(message);
  return "event   " + event.kind + " " + protocol::ToDisplayString(event.payload);
}

}  // namespace

int RunDecode(const std::string& path) {
  auto capture = ReadCapture(path);
  if (!capture.ok()) {
    std::fprintf(stderr, "trellis-port decode: %s\n", capture.status().message().c_str());
    return 1;
  }
  for (const auto& record : capture.value().records) {
    const std::string line = Describe(record.body);
    std::printf("+%9.3f ms  %-3s  %s\n", static_cast<double>(record.micros) / 1000.0,
                record.direction == Direction::kIn ? "in" : "out", line.c_str());
  }
  if (std::fflush(stdout) != 0) return 1;
  if (capture.value().truncated) {
    std::fprintf(stderr,
                 "trellis-port decode: %s ends inside a record (the port stopped "
                 "mid-write); the lines above are every complete frame\n",
                 path.c_str());
    return 1;
  }
  return 0;
}

}  // namespace trellis::port
