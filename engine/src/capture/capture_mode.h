// The capture mode of a catalog: triggers (the default) or logical
// decoding, recorded in its capture_feed row (catalog step 20) since every
// port of a catalog must agree on it, and set by the connect option
// `capture` of a handle that runs staging (spec/engine.md "Capture feeds",
// "Slot lifecycle").
#pragma once

#include <string>
#include <string_view>

#include "pg/connection.h"
#include "trellis/status.h"

namespace trellis::capture {

// Puts the catalog in `schema` (of the connection's database) in the mode
// `requested` asks for ("triggers", "logical", or "auto": logical when the
// server and role allow it, else triggers) and returns the mode in force.
// A switch loses and doubles nothing while writes run: one transaction
// moves every source to the new capture and writes a mark into the slot's
// stream, and the feed takes the slot's changes only on the right side of
// it (capture/decoded_changes.h DecodeRules). Logical mode whose slot was
// lost gets a new one, and every transform rebuilds (what the slot held is
// gone). A validation error naming the fix when `requested` is "logical"
// and the server or role does not allow it.
// REQUIRES: outside a transaction (a slot is created outside one).
Result<std::string> EnsureCaptureMode(pg::Connection& conn, const std::string& schema,
                                      std::string_view requested);

// "triggers" or "logical": the mode the catalog in `schema` captures in now.
Result<std::string> CatalogCaptureMode(pg::Connection& conn, const std::string& schema);

// Whether writes made to a relation after it left a source (a detached
// partition, a table no longer inheriting) are captured until the relation
// sync forgets it. Trigger capture does: the relation's triggers stay until
// then. A slot does not: its publication stops publishing the relation at
// the detach, so while the catalog is in logical mode, or still has a slot
// whose changes may be staged, the relation's rows at the sync may differ
// from its rows at the detach (staging/relation_sync.cc).
Result<bool> LeftRelationWritesCaptured(pg::Connection& conn, const std::string& schema);

}  // namespace trellis::capture
