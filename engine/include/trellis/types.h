// The values engine operations return. Plain data; the port turns them into
// protocol values (spec/protocol.md section 8 documents each shape).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace trellis {

// What apply/define did. `tag` is one of "transform_defined", "paused",
// "resumed", "dropped", "altered".
struct ApplyResult {
  std::string tag;
  std::string target;                  // the transform's target table
  std::vector<std::string> addresses;  // for "resumed": what was resumed
};

struct ColumnStatus {
  std::string name;
  std::string state;  // "live" or "paused"
  std::optional<std::string> paused_kind;
  std::optional<std::string> paused_reason;
};

struct BackfillProgress {
  int64_t rows_done = 0;
  std::optional<int64_t> rows_total;
  std::optional<int64_t> started_at_us;
  std::optional<int64_t> finished_at_us;
  std::optional<std::vector<std::string>> columns;  // unset: every column
};

// Work on a transform that keeps failing with nothing else charged for it
// (spec/engine.md "The unit executor"), retried with backoff.
struct DrainFailureStatus {
  std::string unit;           // "pages", "build_range", "rebuild", "add_key"
  std::string failure_class;  // "data_error" or "other"
  int64_t since_us = 0;
  int64_t attempts = 0;
  std::optional<std::string> sqlstate;
  std::string message;
  std::vector<std::string> parts;  // what failed: keys or key ranges (at most 20)
};

// Capture of a source the transform reads failed: "disruption" (its
// triggers were disabled, dropped or changed outside Trellis). Set while
// the transform waits for the RESUME that reinstalls capture, whatever its
// paused_kind says (an operator's pause stays the pause kind).
struct CaptureFailureStatus {
  std::string kind;  // "disruption"
  std::optional<int64_t> since_us;
  std::string message;  // what was found and the fix
};

// A source index the target's maintenance needs and lacks (GROUP BY and
// JOIN plans: plan/aggregates/source_index_gap.h renders the probe and fix).
struct SourceIndexGapStatus {
  std::string table;                 // the source, "schema.table"
  std::vector<std::string> columns;  // the columns or expressions to index
  std::string role;                  // "group_by", "join_from", "join_joined"
  bool opted_out = false;            // defined WITHOUT SOURCE INDEX
  std::string fix;                   // a CREATE INDEX statement
};

// A partition of a partitioned source the transform is being corrected for
// (it reads backfilling for it meanwhile).
struct CorrectingNodeStatus {
  std::string node;  // the partition, "schema.table"
  // When the correction started; nil while the change under the source
  // waits to be applied (its capture is not installed yet).
  std::optional<int64_t> since_us;
  int64_t keys_remaining = 0;
};

// The last batch the drain applied to a transform's target
// (spec/engine.md "Batch paths").
struct LastBatchStatus {
  std::string path;  // "delta", "recompute" or "rebuild"
  // Keys of the batch (delta, recompute), or the target's rows (rebuild).
  int64_t rows = 0;
  double ms = 0;
  int64_t at_us = 0;
  std::string reason;  // the chooser's estimates
};

// What one path has cost the transform: the decaying average of its
// batches' time per row (per key for delta and recompute, per target row
// for a rebuild), in microseconds.
struct PathCostStatus {
  std::string path;
  double us_per_row = 0;
  int64_t batches = 0;
  std::optional<int64_t> failed_at_us;  // rebuild: the last one that failed
};

struct TransformStatus {
  std::string name;
  std::string target_table;  // schema-qualified, as stored
  // "waiting_to_backfill", "backfilling", "catching_up", "live", "paused".
  std::string status;
  std::optional<std::string> paused_kind;  // "operator", ...
  std::optional<std::string> paused_reason;
  std::optional<int64_t> paused_at_us;
  std::vector<ColumnStatus> columns;
  int64_t backlog_pages = 0;    // ledger pages waiting to be drained
  int64_t backlog_keys = 0;     // keys in those pages
  int64_t capture_backlog = 0;  // capture rows of its source not staged yet
  // How the catalog captures writes: "triggers" or "logical" (a
  // replication slot); spec/engine.md "Capture feeds".
  std::string capture_mode = "triggers";
  // Logical mode only: why this process's staging worker reads the slot by
  // peeks rather than through a walsender stream, with the fix
  // (capture::WalStreamFallback); unset while it streams, in trigger mode,
  // and where this process runs no staging worker.
  std::optional<std::string> capture_fallback;
  BackfillProgress backfill;
  std::optional<int64_t> last_applied_at_us;
  std::optional<DrainFailureStatus> drain_failure;  // unset: none open
  int64_t held_keys = 0;  // keys held after failing with nothing chargeable to a column
  std::optional<CaptureFailureStatus> capture_failure;  // unset: capture is whole
  // Filled by the chains work (issue 12): "target.column" of each paused
  // column upstream that makes a live transform report catching_up.
  std::vector<std::string> paused_upstream_columns;
  // Filled by the GROUP BY work (issue 11).
  std::vector<SourceIndexGapStatus> source_index_gaps;
  // Filled by the partitioned-source work (issue 12).
  std::vector<CorrectingNodeStatus> correcting;
  // "schema.table" of each table it reads with row-level security enabled
  // (after the define, or the define would have been refused), unless it
  // was defined WITHOUT ROW SECURITY: its target's readers are not
  // filtered by that table's policies (spec/engine.md "Row-level security").
  std::vector<std::string> row_security_tables;
  // The drain's last batch, and each path's cost (unset and empty before
  // the first batch; spec/engine.md "Batch paths").
  std::optional<LastBatchStatus> last_batch;
  std::vector<PathCostStatus> path_costs;
};

struct Definition {
  std::string name;
  std::string target_table;
  std::string statement;  // canonical TRANSFORM text
  std::string status;
  std::optional<int64_t> created_at_us;
};

}  // namespace trellis
