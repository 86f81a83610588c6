#include "statements/apply.h"

#include <variant>

#include "capture/slot.h"
#include "grammar/address.h"
#include "grammar/parser.h"
#include "statements/alter.h"
#include "statements/define.h"
#include "statements/lifecycle.h"

namespace trellis::statements {
namespace {

// Visits a parsed statement with the function that runs it.
struct Runner {
  pg::Connection& conn;
  const std::string& schema;

  Result<ApplyResult> operator()(const grammar::TransformStmt& s) const {
    // Logical capture: the slot exists before the define publishes into
    // it, and stays until the define is over.
    auto slot = capture::EnsureSlotBeforeDefine(conn, schema);
    if (!slot.ok()) return slot.status();
    auto target = Define(conn, schema, s);
    if (!target.ok()) return target.status();
    // The name in the form every read and statement takes back.
    return ApplyResult{"transform_defined", grammar::RenderTransformName(s.target.name), {}};
  }
  Result<ApplyResult> operator()(const grammar::PauseStmt& s) const {
    return Pause(conn, schema, s);
  }
  Result<ApplyResult> operator()(const grammar::ResumeStmt& s) const {
    return Resume(conn, schema, s);
  }
  Result<ApplyResult> operator()(const grammar::DropStmt& s) const {
    auto dropped = Drop(conn, schema, s);
    if (!dropped.ok()) return dropped;
    // The last transform gone: a slot would only keep WAL.
    auto unused = capture::DropSlotIfUnused(conn, schema);
    if (!unused.ok()) return unused.status();
    return dropped;
  }
  Result<ApplyResult> operator()(const grammar::AlterAddColumnStmt& s) const {
    return AlterAddColumn(conn, schema, s);
  }
  Result<ApplyResult> operator()(const grammar::AlterDropColumnStmt& s) const {
    return AlterDropColumn(conn, schema, s);
  }
  Result<ApplyResult> operator()(const grammar::AlterColumnStmt& s) const {
    return AlterColumn(conn, schema, s);
  }
};

// A statement the server picked as a deadlock's victim was rolled back
// whole, so it runs again, up to this many times in all. Statements lock
// user tables before catalog rows, but a statement cannot know every order
// a concurrent drain, build or writer takes its locks in (an ALTER that
// routes a column takes the source, the target and the staging fence);
// the other side of a deadlock goes on once the victim is gone, so a
// second attempt normally finds the way clear.
constexpr int kDeadlockAttempts = 3;

bool IsDeadlock(const Status& status) { return status.sqlstate == "40P01"; }

}  // namespace

Result<ApplyResult> Apply(pg::Connection& conn, const std::string& schema, std::string_view text,
                          bool define_only) {
  auto parsed = grammar::Parse(text);
  if (auto* error = std::get_if<grammar::ParseError>(&parsed)) {
    if (error->kind == grammar::ParseError::Kind::kUnsupported) {
      return Status::Unsupported(error->message);
    }
    return Status::Validation(error->message);
  }
  const auto& statement = std::get<grammar::Statement>(parsed);
  if (define_only && !std::holds_alternative<grammar::TransformStmt>(statement)) {
    return Status::Validation(
        "define/2 takes only a TRANSFORM statement; use apply/2 for PAUSE, RESUME, DROP and "
        "ALTER");
  }
  for (int attempt = 1;; ++attempt) {
    auto result = std::visit(Runner{conn, schema}, statement);
    if (result.ok() || attempt == kDeadlockAttempts || !IsDeadlock(result.status())) return result;
  }
}

}  // namespace trellis::statements
