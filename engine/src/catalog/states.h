// The one writer of transform and column state. Every change of a
// transform's state, pause, build progress or stored definition goes through
// a function here, named for the transition it makes (spec/engine.md
// "States"); nothing else in the engine updates the transforms or
// transform_columns rows.
//
// Every function that runs SQL REQUIRES: inside a transaction.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "catalog/model.h"
#include "pg/connection.h"
#include "trellis/states.h"
#include "trellis/status.h"

namespace trellis::catalog {

// Renders SQL that names states: {schema} is the quoted catalog schema, and
// {state:NAME}, {kind:NAME} and {column:NAME} are the quoted wire names of a
// TransformState, PauseKind and ColumnState, checked against the enums (a
// name they lack is a programming error: it throws std::logic_error, which
// the first test to run the statement meets). Every component's SQL that
// reads or writes a state goes through it, so the names live in
// trellis/states.h alone.
std::string StateSql(std::string_view text, const std::string& schema);

// Pauses transform `id` with `kind` and `reason` (a sentence naming the fix).
// A transform already paused keeps its first pause.
[[nodiscard]] Status Pause(pg::Connection& conn, const std::string& schema, int id, PauseKind kind,
                           const std::string& reason);

// Pauses one column: it keeps the values it has while the rest flows.
[[nodiscard]] Status PauseColumn(pg::Connection& conn, const std::string& schema, int id,
                                 const std::string& column, PauseKind kind,
                                 const std::string& reason);
// Puts a live column in quarantine (kind quarantine, with `reason`); true
// when this call paused it, false when it was paused already. It locks the
// column's row either way, so a LiftQuarantine of another transaction
// either sees this transaction's records or is undone by it.
[[nodiscard]] Result<bool> QuarantineColumn(pg::Connection& conn, const std::string& schema, int id,
                                            const std::string& column, const std::string& reason);
// Takes a column out of quarantine once no row is recorded as failing for
// it (spec/engine.md "Charging a failure", "Healing"): it was maintained for
// every other key throughout, so it is live at once, without a rebuild.
// True when this call made it live.
[[nodiscard]] Result<bool> LiftQuarantine(pg::Connection& conn, const std::string& schema, int id,
                                          const std::string& column);

// Resumes a paused transform. An operator pause resumes by draining the
// pages that accumulated; any other pause, or a capture disruption noted
// while paused, lost writes or applied none, so the target is rebuilt. The
// caller reinstalls capture first when `t.capture_disrupted`.
[[nodiscard]] Status Resume(pg::Connection& conn, const std::string& schema, const Transform& t);

// Resumes a paused column and rebuilds it (it missed writes while paused).
// False when the column was not paused.
[[nodiscard]] Result<bool> ResumeColumn(pg::Connection& conn, const std::string& schema, int id,
                                        const std::string& column);

// Restarts the build of transform `id`. `columns` unset rebuilds whole rows;
// set, it rebuilds those columns (merged with any column rebuild still
// pending; a pending whole-row rebuild stays whole). What the rebuild does is
// its pending row in the jobs table (catalog/jobs.h); a first build not yet
// done starts again, whole. The transform goes to waiting_to_backfill
// unless it is paused, in which case it stays paused and the rebuild runs
// when it resumes.
[[nodiscard]] Status RequestRebuild(pg::Connection& conn, const std::string& schema, int id,
                                    const std::optional<std::vector<std::string>>& columns);

// waiting_to_backfill -> live at once, for a define whose source has no rows
// (its target, keyed already, is empty too).
[[nodiscard]] Status FinishEmptyBuild(pg::Connection& conn, const std::string& schema, int id);

// waiting_to_backfill -> backfilling, with the build's size estimate.
[[nodiscard]] Status StartBuild(pg::Connection& conn, const std::string& schema, int id,
                                int64_t total_rows);

// backfilling -> catching_up: keys written since the build began are in the
// ledger, so the transform is live once the pages that exist now drain.
[[nodiscard]] Status FinishBuild(pg::Connection& conn, const std::string& schema, int id);

// catching_up -> live, for every transform whose catch-up pages are drained
// and whose row no other transaction holds (the next call takes those).
[[nodiscard]] Status PromoteCaughtUp(pg::Connection& conn, const std::string& schema);

// SQL true when the transform row `alias` (of {schema}.transforms) is
// catching up and its catch-up pages are drained: live in all but the stored
// status, which the staging worker promotes on its next round. Reads of
// status use it too, so a status read after await_converged says live
// without waiting for that round.
std::string CaughtUpSql(const std::string& schema, std::string_view alias);

// The second half of CaughtUpSql alone: the pages that existed when the
// transform row `alias`'s build ended are drained (true as well once it is
// live, or when it never had any).
std::string CatchUpDrainedSql(const std::string& schema, std::string_view alias);

// Stamps last_applied_at after a drain; coarse on purpose (at most every
// 100 ms), or drains of one transform would queue on its row at each commit.
// As a data-modifying CTE named `noted`, for the statement that completes a
// drain (one round trip fewer on every write): `id_param` is the SQL of the
// transform id, e.g. "$2::int". PostgreSQL runs such a CTE whether or not
// the statement reads it.
[[nodiscard]] std::string NoteAppliedCte(const std::string& schema, std::string_view id_param);

// Capture of source `source_id` (`table`) was changed outside Trellis
// (`problem`): its readers are paused with kind disruption, or, when already
// paused, marked so that their RESUME rebuilds. Returns the names of the
// transforms changed, as the user knows them (a hidden stage's owner, once;
// none when all were marked before).
[[nodiscard]] Result<std::vector<std::string>> MarkCaptureDisrupted(pg::Connection& conn,
                                                                    const std::string& schema,
                                                                    int source_id,
                                                                    const std::string& table,
                                                                    const std::string& problem);

// Stores the canonical TRANSFORM statement definitions/1 shows.
[[nodiscard]] Status RecordDefinition(pg::Connection& conn, const std::string& schema, int id,
                                      const std::string& definition);

// Stores a column's new expression and type (ALTER COLUMN).
[[nodiscard]] Status RecordColumnExpression(pg::Connection& conn, const std::string& schema, int id,
                                            const std::string& column, const std::string& expr,
                                            const std::string& sql_type);

}  // namespace trellis::catalog
