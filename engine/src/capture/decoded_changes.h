// Turning what a replication slot hands over (pgoutput messages, capture/
// pgoutput.h) into the rows of `consumed` (capture/consumed_rows.h) that
// trigger capture would have written for the same writes: one row per run
// of changes of one transaction to one relation with one operation, its
// routing array holding each row version's routing values (an UPDATE's old
// versions first, then its new ones). Pure: no I/O; the logical feed
// (capture/logical_feed.h) reads the slot and the catalog around it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "capture/pgoutput.h"
#include "trellis/status.h"

namespace trellis::capture {

// A catalog source a relation's writes are writes of: the source's table
// itself, or a partition or inheritance child under it.
struct RelationSource {
  int source_id = 0;
  std::vector<std::string> routing_columns;  // the source's routing layout, by name
};

// One row of `consumed`, before it is handed to SQL.
struct DecodedRow {
  int source_id = 0;
  char op = 'I';       // 'I', 'U', 'D' or 'T'
  uint32_t xid = 0;    // the writer's transaction, as pgoutput sends it (32 bits)
  uint32_t relid = 0;  // the relation written
  // One entry per row version, each with one value per routing column
  // (nullopt: NULL). Empty for 'T'.
  std::vector<std::vector<std::optional<std::string>>> versions;
};

// What to do with the stream, and what to skip of it.
struct DecodeRules {
  // Transactions whose commit record ends at or before this are staged
  // already (redelivered after a crash between staging's commit and the
  // slot's confirmation): dropped.
  pgoutput::Lsn staged_through = 0;
  // The relation of capture_marks, and the mark the feed waits for, if any
  // (a switch of capture mode): with `take_before_mark` false, every change
  // up to and including the transaction that wrote the mark is dropped (it
  // was captured by triggers); with it true, every change before that
  // transaction is taken and the stream ends there (triggers capture from
  // it on).
  uint32_t marks_relid = 0;
  std::optional<int64_t> awaiting_mark;
  bool take_before_mark = false;
};

struct DecodedStream {
  std::vector<DecodedRow> rows;
  // The end of the commit record of the last transaction read whole (taken
  // or dropped); 0 when none.
  pgoutput::Lsn last_end = 0;
  bool mark_seen = false;
  // Transactions read whole (taken or dropped, up to a mark that ends the
  // stream).
  int64_t transactions = 0;
  // Changes whose old routing values the server did not send (a replica
  // identity that lacks a routing column): each became a TRUNCATE row of
  // its source, so every reader rebuilds; what happened, for the log.
  std::vector<std::string> unroutable;
};

// Decodes `messages` (the binary rows of one peek, in order) against the
// relations' sources (`sources` by relation oid; a relation not in it is
// no source's and its changes are skipped). An internal error when a
// message cannot be decoded or the stream is malformed (a change outside a
// transaction, a change of a relation never described).
Result<DecodedStream> DecodeChanges(const std::vector<std::string>& messages,
                                    const std::map<uint32_t, std::vector<RelationSource>>& sources,
                                    const DecodeRules& rules);

// The relation oids the stream describes (its Relation messages), so the
// caller can look up their sources before DecodeChanges.
Result<std::vector<uint32_t>> DescribedRelations(const std::vector<std::string>& messages);

// A 2-D text[] literal of `versions` ("{{a,b},{c,NULL}}"), "{}" when empty.
std::string RoutingLiteral(const std::vector<std::vector<std::optional<std::string>>>& versions);

// The full transaction id (xid8) of 32-bit `xid`, a transaction that
// committed before a snapshot whose xmax is `xmax` (so at most 2^31 older).
uint64_t WidenXid(uint32_t xid, uint64_t xmax);

}  // namespace trellis::capture
