#pragma once

#include "status.h"

namespace trellis::testkit {

// Returns a TCP port on 127.0.0.1 that was free a moment ago (the kernel's
// pick for a bind to port 0). Another process may take it before the server
// binds it; the caller retries with a new port when that happens.
Result<int> PickFreePort();

}  // namespace trellis::testkit
