// The catalog's migration steps, as SQL with "{schema}" for the quoted
// catalog schema (catalog/migrations.cc runs them). A released step is never
// edited: a change is a new step.
#pragma once

#include <string_view>

namespace trellis::catalog::steps {

// 0 -> 1: the first catalog (migration_v1.cc).
extern const std::string_view kV1;

// 1 -> 2: catalog v2 (migration_v2.cc), one step in three parts run in
// order in one transaction, each kept by the component that reads it:
// the catalog's tables (inputs, target key, column roles, source relations,
// quarantine, held keys, self-check jobs), capture's routing layout, and the
// jobs and ranges of builds, rebuilds and checks with the drain failures.
extern const std::string_view kV2Catalog;
extern const std::string_view kV2Capture;
extern const std::string_view kV2Jobs;

// 2 -> 3: failure charging (migration_v3_charging.cc): capture failures
// apart from pauses, and when a column paused.
extern const std::string_view kV3Charging;

// 3 -> 4: rebuilds and column rebuilds are jobs; the transforms row loses
// its build cursor (migration_v4_jobs.cc).
extern const std::string_view kV4Jobs;

// 4 -> 5: the columns each transform input reads from capture rows
// (migration_v5_routing.cc).
extern const std::string_view kV5Routing;
// 5 -> 6: corrections of targets for partitions and inheritance children
// that appear under a source or leave it (migration_v6_relations.cc).
extern const std::string_view kV6Relations;

// 6 -> 7: capture functions installed before it pin the settings that fix
// a value's text form (migration_v7_text_forms.cc).
extern const std::string_view kV7TextForms;
// 7 -> 8: delta rows of group transforms' pages, the snapshots their
// recomputes read, and which inputs route every value a delta needs
// (migration_v8_deltas.cc).
extern const std::string_view kV8Deltas;
// 8 -> 9: delta rows without a foreign key, indexed by page only
// (migration_v9_delta_rows.cc).
extern const std::string_view kV9DeltaRows;
// 9 -> 10: each capture row names the relation its statement wrote, so a
// partitioned source's writes can travel as deltas
// (migration_v10_capture_relid.cc).
extern const std::string_view kV10CaptureRelid;
// 10 -> 11: the argument type of each sum and avg column, which says how its
// deltas keep it exactly (migration_v11_argument_types.cc).
extern const std::string_view kV11ArgumentTypes;
// 11 -> 12: the attachment of each captured partition or child, so a
// detach and re-attach between two relation syncs is seen
// (migration_v12_attachments.cc).
extern const std::string_view kV12Attachments;

// 12 -> 13: autovacuum keeps the capture table's empty pages, so writers
// never wait on its truncation (migration_v13_capture_truncate.cc).
extern const std::string_view kV13CaptureTruncate;

// 13 -> 14: the roles that may read each target, and whether its define
// accepted sources with row-level security (migration_v14_privileges.cc).
extern const std::string_view kV14Privileges;

// 14 -> 15: which user transform each stage belongs to, and its place among
// that transform's stages (migration_v15_stages.cc).
extern const std::string_view kV15Stages;

// 15 -> 16: the number of delta rows each ledger page carries, which caps a
// drain's claim (migration_v16_page_deltas.cc).
extern const std::string_view kV16PageDeltas;

// 16 -> 17: the partitions the relation sync saw half detached (DETACH ...
// CONCURRENTLY), until their detach is final
// (migration_v17_pending_detaches.cc).
extern const std::string_view kV17PendingDetaches;

// 17 -> 18: RIGHT and FULL joins among a transform's inputs
// (migration_v18_outer_roles.cc).
extern const std::string_view kV18OuterRoles;

// 18 -> 19: a fan-out join's side units (migration_v19_side_units.cc).
extern const std::string_view kV19SideUnits;
// 19 -> 20: the capture mode, and the position of a logical-decoding feed
// (migration_v20_capture_feed.cc).
extern const std::string_view kV20CaptureFeed;
// 20 -> 21: what each batch path cost (migration_v21_batch_paths.cc).
extern const std::string_view kV21BatchPaths;
// 21 -> 22: pages that stand for a whole target, a path's fixed cost apart
// (migration_v22_whole_pages.cc).
extern const std::string_view kV22WholePages;
// 22 -> 23: pages whose delta rows cover every key
// (migration_v23_covered_pages.cc).
extern const std::string_view kV23CoveredPages;
// 23 -> 24: relations that left a source, watched for a return the relation
// sync did not see (migration_v24_left_relations.cc).
extern const std::string_view kV24LeftRelations;
// 24 -> 25: delta rows folded at staging, one per group, writer and sign
// (migration_v25_folded_deltas.cc).
extern const std::string_view kV25FoldedDeltas;

}  // namespace trellis::catalog::steps
