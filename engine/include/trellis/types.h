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
  BackfillProgress backfill;
  std::optional<int64_t> last_applied_at_us;
  std::optional<DrainFailureStatus> drain_failure;  // unset: none open
};

struct Definition {
  std::string name;
  std::string target_table;
  std::string statement;  // canonical TRANSFORM text
  std::string status;
  std::optional<int64_t> created_at_us;
};

}  // namespace trellis
