// A trellis-port process driven as the BEAM drives it: pipes on its fds 3 and
// 4, frames of {packet, 4}. For the integration tests.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trellis/protocol/codec.h"
#include "trellis/protocol/frame.h"
#include "trellis/protocol/message.h"

namespace trellis::port_test {

using namespace std::chrono_literals;
using Ms = std::chrono::milliseconds;

// Polls `condition` every 50 ms until it holds or `timeout` passes; returns
// its last answer. For states another process reaches on its own time.
bool Eventually(const std::function<bool()>& condition, Ms timeout = Ms(5000));

// Not thread-safe. The destructor kills the process if it still runs.
class PortProcess {
 public:
  // Starts TRELLIS_PORT_BINARY with `args` (argv[1..]).
  explicit PortProcess(const std::vector<std::string>& args = {});
  ~PortProcess();
  PortProcess(const PortProcess&) = delete;
  PortProcess& operator=(const PortProcess&) = delete;

  pid_t pid() const { return pid_; }

  // Writes bytes to the port's fd 3 as they are.
  void SendRaw(std::string_view bytes);
  // Writes one frame with this body.
  void SendBody(std::string_view body);
  void Send(const protocol::Message& message);
  void Request(uint64_t id, const std::string& op, protocol::Map args = {},
               std::optional<uint64_t> timeout_ms = std::nullopt);
  void Cancel(uint64_t id);

  // The next frame body; nullopt on timeout or when the port closed fd 4.
  std::optional<std::string> ReceiveBody(Ms timeout = 10s);
  // The next frame, decoded, other than a `log` event (those are kept for
  // ReceiveLog); nullopt on timeout, EOF or an undecodable frame.
  std::optional<protocol::Message> Receive(Ms timeout = 10s);
  // The next `log` event; frames read meanwhile are kept for Receive.
  std::optional<protocol::Event> ReceiveLog(Ms timeout = 10s);
  // The next reply, skipping events; nullopt as for Receive.
  std::optional<protocol::Reply> ReceiveReply(Ms timeout = 10s);
  // Reads the hello event every port sends first.
  std::optional<protocol::Event> ReceiveHello(Ms timeout = 10s);
  // Sends a request and waits for the next reply.
  std::optional<protocol::Reply> Call(uint64_t id, const std::string& op, protocol::Map args = {},
                                      std::optional<uint64_t> timeout_ms = std::nullopt,
                                      Ms wait = 30s);

  // True once fd 4 reached EOF (the port exited or closed it).
  bool OutputClosed(Ms timeout);
  // Closes fd 3: the port sees EOF.
  void CloseInput();
  // The exit status (128 + signal if killed); nullopt if still running.
  std::optional<int> WaitExit(Ms timeout);

 private:
  // The next frame that is (want_log) or is not a log event, keeping the
  // others for the other reader.
  std::optional<protocol::Message> ReceiveUntil(Ms timeout, bool want_log);

  pid_t pid_ = -1;
  int to_port_ = -1;
  int from_port_ = -1;
  bool eof_ = false;
  bool reaped_ = false;
  int exit_status_ = 0;
  protocol::FrameReader reader_;
  std::deque<protocol::Message> held_;  // read by ReceiveLog, not yet by Receive
  std::deque<protocol::Event> logs_;    // read by Receive, not yet by ReceiveLog
};

// Helpers for reading replies in assertions.
bool IsOk(const protocol::Reply& reply);
const protocol::Value& OkValue(const protocol::Reply& reply);
// The error's code ("" for an ok reply) and message.
std::string ErrorCode(const protocol::Reply& reply);
std::string ErrorMessage(const protocol::Reply& reply);
std::string Show(const protocol::Reply& reply);

// Runs `trellis-port` with `args` to completion; stdout captured.
struct ToolRun {
  int status = -1;
  std::string out;
};
ToolRun RunTool(const std::vector<std::string>& args);

}  // namespace trellis::port_test
