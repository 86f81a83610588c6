// Capture disruptions: a source whose capture triggers were disabled,
// dropped, pointed elsewhere or left enabled only for some sessions by
// something other than Trellis (ALTER TABLE ... DISABLE TRIGGER, a loader's
// --disable-triggers, ENABLE TRIGGER ALL, which is not ENABLE ALWAYS), or
// whose table is gone. Writes made meanwhile never reached the targets, so
// every transform reading the source is paused with kind "disruption"; its
// RESUME reinstalls capture and rebuilds it (spec/engine.md "Capture").
#pragma once

#include <string>
#include <vector>

#include "pg/connection.h"
#include "trellis/status.h"

namespace trellis::capture {

struct Disruption {
  std::string table;    // "schema.table", quoted where needed
  std::string problem;  // what is wrong with its capture
};

// Finds every disrupted source that a transform reads, and pauses those
// transforms with kind "disruption". One already paused for another reason
// keeps its pause and is marked capture_disrupted, so that its RESUME
// rebuilds too. Returns the disrupted sources, found now or before.
// REQUIRES: inside a transaction.
Result<std::vector<Disruption>> PauseDisruptedReaders(pg::Connection& conn,
                                                      const std::string& schema);

}  // namespace trellis::capture
