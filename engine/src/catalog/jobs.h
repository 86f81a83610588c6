// The jobs table: the work on a target that is not ledger pages. A build
// (first build, rebuild, column rebuild) is a set of key-range jobs, planned
// when it starts and run by any drain worker through the unit executor; a
// job is deleted by the transaction that finishes it, so a crashed worker
// leaves it for another (spec/engine.md "Jobs"). Every statement that
// writes the table is here.
//
// Every function REQUIRES: inside a transaction.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pg/connection.h"
#include "trellis/status.h"

namespace trellis::catalog {

// The kinds of a build's jobs, as the jobs table names them.
enum class JobKind {
  kBuildRange,     // a first build's range: appended to a target without a key
  kRebuild,        // a rebuild's range: whole rows recomputed in place
  kColumnRebuild,  // a column rebuild's range: some columns recomputed in place
};
std::string_view JobKindName(JobKind kind);
std::optional<JobKind> JobKindFromName(std::string_view name);
// "('build_range', 'rebuild', 'column_rebuild')": for `kind IN ...`.
std::string BuildJobKindsSql();

// What a build still to be planned will do: its kind, and a column rebuild's
// columns.
struct PendingBuild {
  JobKind kind = JobKind::kBuildRange;
  std::optional<std::vector<std::string>> columns;
};

// One job: a key range (lo, hi] of the target, each bound a text[] literal
// (nullopt: unbounded), tried `attempts` times before.
struct RangeJob {
  std::string id;
  JobKind kind = JobKind::kBuildRange;
  std::optional<std::string> lo;
  std::optional<std::string> hi;
  std::optional<std::vector<std::string>> columns;
  int attempts = 0;
};

// Records a rebuild of transform `id` to be planned when it starts: one job
// over the whole key range. `columns` unset rebuilds whole rows; set, those
// columns, merged with a column rebuild already pending or running; a whole-
// row rebuild pending or running stays whole. Replaces the transform's
// rebuild jobs (a running rebuild starts again). REQUIRES: the transform's
// row locked for update (no job of it is running).
[[nodiscard]] Status RequestRebuildJob(pg::Connection& conn, const std::string& schema, int id,
                                       const std::optional<std::vector<std::string>>& columns);

// Drops every build job of transform `id` (a first build started again).
[[nodiscard]] Status DropBuildJobs(pg::Connection& conn, const std::string& schema, int id);

// The build transform `id` is waiting to start: a first build when its
// target has no key (`key_indexed` false), else the rebuild its pending job
// records (a whole-row rebuild when none does).
[[nodiscard]] Result<PendingBuild> PendingBuildOf(pg::Connection& conn, const std::string& schema,
                                                  int id, bool key_indexed);

// Plans `build` of transform `id` as the ranges cut at `boundaries` (in key
// order): (NULL, b1], (b1, b2], ..., (bn, NULL], each estimated at its share
// of `estimated_rows`, replacing the pending job.
[[nodiscard]] Status PlanRanges(pg::Connection& conn, const std::string& schema, int id,
                                const PendingBuild& build,
                                const std::vector<std::optional<std::string>>& boundaries,
                                long estimated_rows);

// Job `job` is done: deleted.
[[nodiscard]] Status FinishJob(pg::Connection& conn, const std::string& schema,
                               const RangeJob& job);

// Job `job` of transform `id` failed in `failed` (parts of its range; the
// rest was written): it is replaced by one job per failing part, each
// waiting with backoff, carrying `error`.
[[nodiscard]] Status DeferJob(
    pg::Connection& conn, const std::string& schema, int id, const RangeJob& job,
    const std::vector<std::pair<std::optional<std::string>, std::optional<std::string>>>& failed,
    const std::string& error);

// True when transform `id` has a build job left (running, waiting for a
// retry, or pending).
[[nodiscard]] Result<bool> HasBuildJobs(pg::Connection& conn, const std::string& schema, int id);

}  // namespace trellis::catalog
