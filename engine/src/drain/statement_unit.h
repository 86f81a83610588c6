// A unit that is one statement over the whole target, with nothing to cut
// (making the target's key at the end of a first build).
#pragma once

#include <optional>
#include <string>

#include "drain/unit.h"

namespace trellis::drain {

// How long a StatementUnit's statement may wait for its locks, and the
// locks it takes first under the same bound.
struct LockWait {
  std::string timeout;  // a lock_timeout value, e.g. "200ms"
  std::string first;    // statements (LOCK TABLE ...) run before it, or empty
};

class StatementUnit final : public UncutUnit {
 public:
  StatementUnit(std::string kind, std::string sql, std::optional<LockWait> wait = std::nullopt)
      : kind_(std::move(kind)), sql_(std::move(sql)), wait_(std::move(wait)) {}

  std::string_view kind() const override { return kind_; }
  std::string Describe() const override { return "the whole target"; }
  Result<long> Apply(pg::Connection& conn) override {
    if (!wait_) {
      auto done = conn.Query(sql_);
      if (!done.ok()) return done.status();
      return done->affected;
    }
    // The bound is set, the statement run and the bound taken off in one
    // script: it holds for this statement (and the locks taken first) only,
    // never for what the transaction does after it. A statement that fails
    // ends the script there; the rollback (of the unit's savepoint or of
    // the transaction) undoes the SET LOCAL with it. DEFAULT is the
    // session's own value, pinned at connect (pg/session_settings.h).
    TRELLIS_RETURN_IF_ERROR(conn.ExecScript("SET LOCAL lock_timeout = '" + wait_->timeout + "'; " +
                                            wait_->first + sql_ +
                                            "; SET LOCAL lock_timeout TO DEFAULT"));
    return 0L;
  }

 private:
  std::string kind_;
  std::string sql_;
  std::optional<LockWait> wait_;
};

}  // namespace trellis::drain
