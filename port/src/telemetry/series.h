// The port's metric series. Each family is one line in series.cc; the ones
// the port's own code updates are declared here. Families read from the
// engine's counters (trellis/engine_metrics.h) need no declaration: they are
// read when a snapshot is taken.
#pragma once

#include "telemetry/metrics.h"

namespace trellis::port::telemetry {

// Calls answered, by op and result ("ok", an error code, or "cancelled").
extern const CounterFamily kCalls;
// Time from reading a request to its reply (or cancel), by op.
extern const HistogramFamily kCallDuration;

// The session pool: sessions open, sessions running a call, and the size.
extern const GaugeFamily kPoolOpen;
extern const GaugeFamily kPoolInUse;
extern const GaugeFamily kPoolMax;

// Frames and bytes (length prefixes included) by direction: "in" or "out".
extern const CounterFamily kFrames;
extern const CounterFamily kBytes;

// Log lines sent to the BEAM, by level, and lines dropped because the BEAM
// did not read them in time.
extern const CounterFamily kLogLines;
extern const CounterFamily kLogLinesDropped;

}  // namespace trellis::port::telemetry
