// The replication slot and the publication of a catalog captured by logical
// decoding: made when the first source needs them, replaced when lost, and
// dropped once nothing reads through them (spec/engine.md "Capture feeds",
// "Slot lifecycle"). Both are named capture::SlotName; the catalog's
// capture_feed row (catalog step 20) records them while they are in use.
//
// A slot is made outside any transaction (the server refuses one in a
// transaction that has written) and waits for the transactions running
// then; it is dropped under the staging fence, so no staging batch is
// reading it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "pg/connection.h"
#include "trellis/status.h"

namespace trellis::capture {

// Whether replication slot `slot` exists (lost or not).
Result<bool> SlotExists(pg::Connection& conn, const std::string& slot);

// The publication `name` (with the catalog's capture_marks in it) and the
// slot `name`, each made when missing. The publication comes first:
// decoding looks it up as of each change it decodes, and one made after
// the slot's start is missing for the changes before it.
// REQUIRES: outside a transaction.
Status EnsurePublicationAndSlot(pg::Connection& conn, const std::string& schema,
                                const std::string& name);

// Logical mode whose slot is gone (dropped by hand), invalidated
// (`wal_status = 'lost'`) or unusable (its publication dropped): the old
// slot and publication go, new ones are made, every source is published
// again, and every transform rebuilds, since what the old slot held is
// lost. `why` says what was found, for the log.
// REQUIRES: outside a transaction.
Status ReplaceLostSlot(pg::Connection& conn, const std::string& schema, const std::string& why);

// Held by a define from before it makes sure of the slot until it has
// committed or failed: DropSlotIfUnused leaves the slot alone meanwhile.
// Without it the health round, finding no source yet, dropped the slot a
// define had just made, and that define failed ("run the statement
// again"). A session-level advisory lock taken shared, released when the
// hold goes (or with the session).
class SlotHold {
 public:
  SlotHold(pg::Connection* conn, std::string schema) : conn_(conn), schema_(std::move(schema)) {}
  SlotHold(const SlotHold&) = delete;
  SlotHold& operator=(const SlotHold&) = delete;
  ~SlotHold();

 private:
  pg::Connection* conn_;  // null: nothing held (triggers mode)
  std::string schema_;
};

// Before a define: a catalog in logical mode without a slot (its last
// transform was dropped) gets one, so the define's sources are published
// into a stream that already exists, and the slot is held for the define
// (SlotHold). Nothing in triggers mode.
// REQUIRES: outside a transaction.
Result<std::unique_ptr<SlotHold>> EnsureSlotBeforeDefine(pg::Connection& conn,
                                                         const std::string& schema);

// Once no transform reads any source, the slot and the publication are
// dropped (a slot keeps WAL for as long as it exists) and the catalog
// records that it has none; the mode stays. Run after a drop and by the
// staging worker's health round; a define holding the slot (SlotHold)
// keeps it. Returns whether it dropped them.
// REQUIRES: outside a transaction.
Result<bool> DropSlotIfUnused(pg::Connection& conn, const std::string& schema);

// For a reader that must know whether the writes a snapshot sees are all
// staged (self-check's settle; spec/engine.md "Self-check"): the slot's
// staged position as a number (0 before its first batch), or nullopt when
// the catalog reads no slot (triggers mode: capture rows show every
// unstaged write to SQL, and no wait is needed). Every write whose commit
// ended at or before it is staged, its pages committed.
Result<std::optional<uint64_t>> StagedPosition(pg::Connection& conn, const std::string& schema);

// The server's WAL insert position now: a write visible to any earlier
// snapshot committed before it.
Result<uint64_t> InsertPosition(pg::Connection& conn);

}  // namespace trellis::capture
