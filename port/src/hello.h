// The `hello` event the port sends before reading anything (spec section 4).
#pragma once

#include "trellis/protocol/message.h"

namespace trellis::port {

// The protocol version, the engine version, and the closed sets of error
// codes and enum strings this port may send. New enums are added here.
protocol::Event HelloEvent();

}  // namespace trellis::port
