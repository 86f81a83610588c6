// The engine's public API. A Session is one database connection plus the
// engine operations that run on it; the port program keeps a pool of them and
// runs each call on one. No libpq or msgpack type appears here.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trellis/options.h"
#include "trellis/quarantine.h"
#include "trellis/self_check.h"
#include "trellis/status.h"
#include "trellis/types.h"

namespace trellis {

namespace pg {
class Connection;
}

inline constexpr std::string_view kEngineVersion = TRELLIS_VERSION;  // from elixir/mix.exs

struct ServerInfo {
  std::string instance;        // "<database>/<catalog schema>"
  std::string server_version;  // PostgreSQL's server_version, e.g. "15.18"
  std::string engine_version;
};

// One connection and the operations on it. Not thread-safe: one call at a
// time. RequestCancel() alone may be called from any thread, to stop the
// statement another thread is running (deadlines, cancel frames, shutdown).
class Session {
 public:
  static Result<std::unique_ptr<Session>> Open(const ConnectOptions& options);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Also makes a running AwaitConverged return a timeout error.
  void RequestCancel();
  // Clears a cancel request; the pool calls it before each call.
  void ResetCancel() { cancelled_ = false; }
  // True once the connection is unusable; the pool replaces such a session.
  bool broken() const;
  // True once a message large enough to grow the connection's buffers for
  // good (a long statement, a large row) went through it; closing the
  // session is the only way to give that memory back. The pool closes such
  // a session when its call ends.
  bool holds_grown_buffers() const;

  const ConnectOptions& options() const { return options_; }
  // "<database>/<catalog schema>".
  const std::string& instance() const { return instance_; }

  Result<ServerInfo> Info();

  // Creates or upgrades the catalog (idempotent; safe from many nodes).
  Status Migrate();
  // Ok when the catalog is migrated; not_migrated naming the fix otherwise.
  Status CheckMigrated();
  // Runs one statement of the grammar (spec/grammar.md). With `define_only`
  // only TRANSFORM is accepted.
  Result<ApplyResult> Apply(std::string_view statement, bool define_only);
  Result<TransformStatus> ReadStatus(const std::string& transform);
  Result<std::vector<Definition>> Definitions();
  Result<bool> HasLiveDrainWorkers();
  Result<bool> HasLiveStagingWorker();
  Result<std::string> WatermarkToken();
  // True when converged, false when `timeout` passed first.
  Result<bool> AwaitConverged(const std::string& token, std::chrono::milliseconds timeout);
  // Rebuilds a transform's target from its source.
  Status RequestBackfill(const std::string& transform);
  // Starts a self-check of `transform`'s target, or returns the one still
  // unfinished (engine/src/drain/self_check_jobs.h).
  Result<SelfCheckJob> StartSelfCheck(const std::string& transform,
                                      const SelfCheckRequest& request);
  // The self-check job `id`; unset once replaced or its transform dropped.
  Result<std::optional<SelfCheckJob>> ReadSelfCheckJob(int64_t id);
  // The columns in quarantine: every one (`target` unset), or those of the
  // address `target` ("transform" or "transform.column"; a column not in
  // quarantine gives none).
  Result<std::vector<QuarantineEntry>> Quarantined(const std::optional<std::string>& target);
  // At most `limit` recorded failing rows of the quarantined columns of
  // `target`, in key order, after `cursor` (what the previous page returned).
  Result<SamplePage> SampleQuarantined(const std::string& target, int64_t limit,
                                       const std::optional<std::string>& cursor);
  // Recomputes key `key` (its values as text, in key-column order; nullopt
  // is NULL, as a group's key or a side unit's may be) that `transform`
  // holds: released when it writes (or is charged to columns), held again
  // with the new error (returned) when it still fails.
  Status ReleaseKey(const std::string& transform,
                    const std::vector<std::optional<std::string>>& key);
  // Pauses now the readers of every source whose capture was changed outside
  // Trellis, and returns those tables ("schema.table"). The staging worker
  // makes the same check about once a second.
  Result<std::vector<std::string>> DetectCaptureDisruptions();
  // Puts the catalog in the capture mode options().capture_mode asks for
  // ("triggers", "logical" or "auto") and returns the mode in force
  // ("triggers" or "logical"); spec/engine.md "Capture feeds". A handle that
  // runs staging calls it as it connects.
  Result<std::string> EnsureCaptureMode();
  // The definitions as SQL to append to a schema-only dump of the database:
  // loaded after it, the targets are built again (spec/engine.md "Dumps").
  Result<std::string> DumpDefinitionsSql();

 private:
  Session(ConnectOptions options, std::unique_ptr<pg::Connection> conn);
  ConnectOptions options_;
  std::unique_ptr<pg::Connection> conn_;
  std::string instance_;
  std::atomic<bool> cancelled_{false};
};

// The advisory lock key (pg_advisory_lock(bigint)) that migrations of the
// catalog in `schema` take.
int64_t MigrationLockKey(const std::string& schema);

}  // namespace trellis
