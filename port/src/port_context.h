// What an op may see and change of the port it runs in: the handle's
// configuration, the connect lifecycle, and shutdown.
#pragma once

#include <cstdint>
#include <string>

#include "trellis/options.h"
#include "trellis/status.h"

namespace trellis::port {

// The handle's configuration, fixed by a successful `connect`.
struct HandleConfig {
  ConnectOptions options;
  int64_t pool_size = 10;     // at most this many sessions (and worker threads)
  bool staging = false;       // run (or stand by for) the instance's staging worker
  int64_t drain_threads = 0;  // drain workers to run
  std::string instance;       // "<database>/<schema>", set once connect succeeded
};

// Implemented by the Dispatcher. Every method runs on the io thread: ops call
// it from inline handlers and from the admit/finish hooks, never from a
// database handler (which runs on a worker thread).
class PortContext {
 public:
  virtual ~PortContext() = default;

  // True once a connect succeeded.
  virtual bool connected() const = 0;
  // The configuration of the connect that succeeded or is running; nullptr
  // before the first connect.
  virtual const HandleConfig* config() const = 0;

  // Creates the session pool for `config` so the connect call can run on it.
  // A validation error when a connect succeeded or is still running.
  virtual Status BeginConnect(HandleConfig config) = 0;
  // Ends the connect begun by BeginConnect: when `ok`, the handle is
  // connected to `instance` ("<database>/<schema>"); otherwise the pool is
  // dropped and connect may be called again.
  virtual void EndConnect(bool ok, const std::string& instance) = 0;

  // Shuts the port down once the current call's reply is written: every
  // other call in flight is answered "the handle was shut down", running
  // statements are cancelled, and the process exits 0.
  virtual void RequestShutdown() = 0;
};

}  // namespace trellis::port
