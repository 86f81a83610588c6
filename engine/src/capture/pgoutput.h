// Decoding the messages of PostgreSQL's built-in logical decoding output
// plugin, `pgoutput`, protocol version 1 (the "Logical Replication Message
// Formats" chapter of the PostgreSQL manual): what a logical-decoding
// capture feed reads from its replication slot (spec/engine.md "Capture
// feeds"). One call decodes one message, as one row of
// pg_logical_slot_peek_binary_changes carries it. Pure: no I/O, no libpq.
//
// Values travel in their text form (protocol version 1 has no binary
// values), the same form trigger capture routes, so a decoded row feeds
// the same routing layouts.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "trellis/status.h"

namespace trellis::capture::pgoutput {

// A log sequence number, as the server counts it.
using Lsn = uint64_t;

// 'B': a transaction's changes follow, up to its Commit.
struct Begin {
  Lsn final_lsn = 0;           // the LSN of its commit record
  int64_t commit_time_us = 0;  // microseconds since 2000-01-01 UTC
  uint32_t xid = 0;
};

// 'C': the end of the transaction Begin opened.
struct Commit {
  Lsn commit_lsn = 0;
  Lsn end_lsn = 0;  // the end of its commit record
  int64_t commit_time_us = 0;
};

struct RelationColumn {
  bool key = false;  // part of the replica identity
  std::string name;
  uint32_t type_oid = 0;
  int32_t type_modifier = -1;
};

// 'R': a relation's shape, sent before its first change in a session and
// again after it changes; the tuples of later changes follow its columns.
struct Relation {
  uint32_t oid = 0;
  std::string schema;  // "" stands for pg_catalog
  std::string name;
  char replica_identity = 'd';  // 'd' default, 'n' nothing, 'f' full, 'i' index
  std::vector<RelationColumn> columns;
};

// One column's value in a tuple.
enum class ValueKind {
  kNull,            // 'n'
  kUnchangedToast,  // 'u': an UPDATE left an out-of-line value as it was; not sent
  kText,            // 't': the value's text form, in `text`
};

struct Value {
  ValueKind kind = ValueKind::kNull;
  std::string text;
};

using Tuple = std::vector<Value>;

// 'I'
struct Insert {
  uint32_t relation_oid = 0;
  Tuple new_tuple;
};

// 'U'. The old tuple is sent only as the replica identity allows: its key
// columns ('K', when the key changed) or every column ('O', REPLICA IDENTITY
// FULL); otherwise absent.
struct Update {
  uint32_t relation_oid = 0;
  std::optional<Tuple> old_tuple;
  bool old_is_key_only = false;  // old_tuple holds the key columns only ('K')
  Tuple new_tuple;
};

// 'D': the old tuple, its key columns ('K') or all of them ('O').
struct Delete {
  uint32_t relation_oid = 0;
  Tuple old_tuple;
  bool old_is_key_only = false;
};

// 'T'
struct Truncate {
  bool cascade = false;
  bool restart_identity = false;
  std::vector<uint32_t> relation_oids;
};

// 'O' (a change replayed from another origin) and 'Y' (a type's name):
// nothing capture uses, decoded only so that they are not mistaken for an
// error.
struct Origin {
  Lsn commit_lsn = 0;
  std::string name;
};
struct Type {
  uint32_t oid = 0;
  std::string schema;
  std::string name;
};

using Message =
    std::variant<Begin, Commit, Relation, Insert, Update, Delete, Truncate, Origin, Type>;

// Decodes one message. A message that is cut short, has bytes left over,
// or begins with a tag protocol version 1 does not define is an internal
// error naming what was wrong (the slot's bytes come from the server, so
// it means a version mismatch, never bad user input).
Result<Message> Decode(std::string_view bytes);

// The text form of an LSN, as pg_lsn prints it ("16/B374D848").
std::string LsnText(Lsn lsn);

}  // namespace trellis::capture::pgoutput
