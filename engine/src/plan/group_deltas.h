// The delta path of a group transform (spec/engine.md "Deltas"): the SQL
// that stages captured row versions as delta rows, applies a drain's delta
// rows exactly once, and records the snapshot every recompute reads. Pure
// text, rendered once per plan version by GroupPlan (group_plan.h), which
// owns the decision whether a transform's changes travel as deltas.
#pragma once

#include <string>
#include <vector>

#include "plan/aggregates/group_sql.h"
#include "plan/plan_types.h"

namespace trellis::plan {

// What the delta statements are rendered from: the group transform as
// bound from the catalog.
struct DeltaInputs {
  std::string schema;  // the catalog schema, unquoted
  int transform_id = 0;
  int source_id = 0;
  // The shape deltas are applied with: sums kept by deltas only where they
  // are exact (aggregates::SumKindOf), the others recomputed per group.
  aggregates::GroupShape shape;
  // The routed columns (names) and their 1-based positions in the source's
  // routing layout, in the order delta_rows.row_values holds them.
  std::vector<std::string> routed_columns;
  std::vector<size_t> routed_positions;
};

// Staging: one row per captured row version of the source, over the CTE
// `consumed` (id, source_id, op, xid, routing, width, versions, member):
// (transform_id, key text[], sign smallint, xid xid8, row_values text[]).
// The key is the group expressions' text over the rebuilt row, as the dirty
// keys give it. The sign is NULL for a capture row whose relation is not
// `member` (a partition detached a moment ago): its group is recomputed.
std::string StageDeltaRowsSql(const DeltaInputs& in);

// True when the plan's deltas fold at staging: every state column folded
// from changes has a combiner (aggregates::StateColumn::combine_template: a
// sum for a count, a running sum or a count per display scale; a min or max
// for an extreme, whose delta is the most extreme changed value), so a
// group's changes by one writer and sign fold to one row, and the rows of
// a group combine to the delta of all their changes. A plan without a
// column folded from changes stages row versions (StageDeltaRowsSql), as
// does a quarantined column's (the plan takes no deltas then).
bool FoldsDeltas(const DeltaInputs& in);

// Staging of a plan that FoldsDeltas: what StageDeltaRowsSql yields, with
// `folded` true, but one row per (transform, key, xid, sign): the WHERE
// and the aggregate arguments are evaluated over each rebuilt version and
// folded by the plan's delta fragments, and `row_values` holds the folded
// state columns' text, in StateColumns order (those with a delta fragment).
// A group whose versions of one writer and sign all fail the WHERE gets no
// row (its changes change nothing); a NULL sign (not `member`) gets one,
// and its group is recomputed. The xid stays in the row: a recompute's
// recorded snapshot skips a writer's changes per group (ApplyDeltaRowsSql).
std::string StageFoldedDeltaRowsSql(const DeltaInputs& in);

// A query over pages $1 (bigint[]) answering whether the recompute of
// keys without delta rows (RecomputedOnDeltaPage) may find any: true when a
// page was not staged with delta rows of the routed width for every key
// (pages.covered_width: a key with none, pages written elsewhere, rows
// staged before an ALTER routed another column) or when the transform has
// a held group. Asked after the delta statement, so a hold made before it
// ran is seen; the drain holds the pages' buckets, so no other drain holds
// one of their keys afterwards.
std::string RecomputeNeededSql(const DeltaInputs& in);

// The statement that records the snapshot of the statement it is a CTE of
// (aggregates::RecomputeGroupsSql's `record`): the groups whose keys
// `keys_sql` lists (a scalar text[] of each key's text[] as text; "NULL"
// for every group), when `when` (SQL; empty for always) holds: a record
// must be written only by a statement that does recompute those groups.
std::string RecordSnapshotSql(const DeltaInputs& in, const std::string& keys_sql,
                              const std::string& when = "");

// The drain of pages $1 (bigint[]) by deltas: the statements that apply
// the pages' delta rows to the target, each delta row once. A delta row is
// skipped when its writer is visible in a snapshot a recompute recorded for
// its group (or for every group), and when its group is held
// (drain/held_keys.h: held groups are recomputed instead).
// A plan that FoldsDeltas has two: its folded rows combined per group
// (each column by its combiner) and applied, then, only when the pages hold any (`needed`), the
// rows staged unfolded (before catalog step 25, or by a batch whose fold failed), applied as
// before.
std::vector<PagesStatement> ApplyDeltaRowsSql(const DeltaInputs& in);

// The SQL condition, over a page key `key_sql` (text[]) of page `page_id`,
// one of the claimed pages `claimed` (a bigint[] expression), that the drain
// recomputes the group instead of applying deltas: the page carries no
// delta row of it, or it is held.
std::string RecomputedOnDeltaPage(const DeltaInputs& in, const std::string& page_id,
                                  const std::string& key_sql, const std::string& claimed);

// The staging statement's part that drops records no pending delta can
// need: one whose snapshot's xmax is at or below the transaction id of
// every writer whose changes are not staged yet and of every delta row (a
// transaction still running with a smaller id was running when the
// snapshot was taken too, so it is not visible in it). `oldest_unstaged`
// is the capture feed's scalar SELECT of the first
// (capture::CaptureFeed::OldestUnstagedXidSql). Returns the records
// dropped.
std::string CollectSnapshotsSql(const std::string& schema, const std::string& oldest_unstaged);

}  // namespace trellis::plan
