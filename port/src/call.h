// One database call in flight, shared by the io thread (which owns its reply)
// and the worker thread that runs it.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>

#include "op_registry.h"
#include "trellis/engine.h"
#include "trellis/protocol/value.h"

namespace trellis::port {

// Thread-safety: the const members are set before the call is shared and
// never change. `session` is guarded by `mu`; `cancel_requested` is atomic.
// Whether the call still needs a reply is known only to the io thread (the
// Dispatcher's table of calls in flight), so a late result is dropped there.
struct Call {
  Call(uint64_t id, const Op& op, protocol::Map args, std::chrono::milliseconds timeout,
       std::chrono::steady_clock::time_point received)
      : id(id), op(op), args(std::move(args)), timeout(timeout), received(received) {}
  Call(const Call&) = delete;
  Call& operator=(const Call&) = delete;

  const uint64_t id;
  const Op& op;
  const protocol::Map args;
  const std::chrono::milliseconds timeout;
  const std::chrono::steady_clock::time_point received;  // when the port read the request

  // Set (never cleared) once the call must stop: its deadline passed, a
  // cancel frame came, or the port shuts down. A worker that has not started
  // the handler yet skips it.
  std::atomic<bool> cancel_requested{false};

  std::mutex mu;
  // The session running the handler, while it runs; the Canceller calls
  // RequestCancel() on it under `mu`, so the worker cannot hand the session
  // to another call in between.
  Session* session = nullptr;
};

}  // namespace trellis::port
