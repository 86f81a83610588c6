// The op table: every request names an op, and this table says what runs it
// and where. An op lives in its own file under ops/ and registers itself with
// one line (see port/README.md, "Adding an op"):
//
//   const OpRegistrar kPing(InlineOp("ping", Ping));
//   const OpRegistrar kServerInfo(DatabaseOp("server_info", ServerInfo));
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "trellis/engine.h"
#include "trellis/protocol/value.h"
#include "trellis/status.h"

namespace trellis::port {

class PortContext;

// Runs on the io thread, so it must be quick and must not touch the database.
using InlineHandler =
    std::function<Result<protocol::Value>(PortContext& port, const protocol::Map& args)>;
// Runs on a worker thread with a session from the pool to itself; may block
// on the database. The deadline and cancel frames stop it through
// Session::RequestCancel, so a handler sees a cancelled statement as an error
// and should return it rather than retry.
using DatabaseHandler =
    std::function<Result<protocol::Value>(Session& session, const protocol::Map& args)>;
// Optional for database ops, io thread, before the call is queued: a failed
// Status is the call's reply and nothing is queued.
using AdmitHook = std::function<Status(PortContext& port, const protocol::Map& args)>;
// Optional for database ops, io thread, once the call has ended however it
// ended: its reply's status, or a timeout, cancel or shutdown status, and the
// reply's value when the call succeeded (nullptr otherwise). It runs just
// before the reply is queued.
using FinishHook =
    std::function<void(PortContext& port, const Status& outcome, const protocol::Value* value)>;

enum class OpKind {
  kInline,    // answered on the io thread (ping, echo, config, shutdown)
  kDatabase,  // queued for a worker thread and a pooled session
};

struct Op {
  std::string name;
  OpKind kind = OpKind::kInline;
  InlineHandler run_inline;      // kInline
  DatabaseHandler run_database;  // kDatabase
  AdmitHook admit;               // kDatabase, optional
  FinishHook finish;             // kDatabase, optional
  // kDatabase: false only for an op that must run before connect (connect).
  bool needs_connection = true;
};

Op InlineOp(std::string name, InlineHandler handler);
Op DatabaseOp(std::string name, DatabaseHandler handler);

// Filled during static initialisation, read-only afterwards (so reads need
// no lock once main() runs).
class OpRegistry {
 public:
  static OpRegistry& Global();

  // REQUIRES: no op of that name yet (a duplicate aborts: a programmer error).
  void Add(Op op);
  // nullptr for an unknown op.
  const Op* Find(const std::string& name) const;
  std::vector<std::string> Names() const;

 private:
  std::unordered_map<std::string, Op> ops_;
};

// Registers an op from a namespace-scope constant in the op's own file.
struct OpRegistrar {
  explicit OpRegistrar(Op op);
};

}  // namespace trellis::port
