// What the catalog says of every transform now, for the program hosting the
// engine to export as gauges (the port program: trellis_transform_* series).
// The handle whose staging worker holds the instance's election reads it
// every few seconds (reads/transform_reports.h); every other handle keeps
// none, so each transform is reported once per fleet, whatever the number
// of handles and nodes.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "trellis/options.h"
#include "trellis/status.h"

namespace trellis {

struct TransformReport {
  // The target's name as the catalog stores it: the `transform` label the
  // failure counters (charging_metrics.h) carry too.
  std::string transform;
  // The same name as status/2 reports it (quoted only where it must be).
  std::string name;
  std::string status;  // as TransformStatus::status
  // Seconds, by the server's clock, since the oldest write still waiting in
  // its ledger was staged (spec/engine.md "Lag and the transform reports");
  // 0 when none waits.
  double lag_seconds = 0;
  int64_t backlog_pages = 0;
  int64_t backlog_keys = 0;
  int64_t capture_backlog = 0;
  int64_t held_keys = 0;
  int64_t quarantined_columns = 0;
  bool drain_failure = false;      // a drain failure is open
  bool capture_disrupted = false;  // capture of a table it reads was changed outside Trellis
  // Divergences the latest finished self-check found; unset when none finished.
  std::optional<int64_t> self_check_divergences;
  // A newer check is queued or running. Starting one replaces the finished
  // job and its report, so the read finds no count then; the published
  // reports keep the last one they had until the newer check finishes.
  bool self_check_pending = false;
  // The drain's last batch: its path ("delta", "recompute", "rebuild"; ""
  // before the first), rows and time; and each path's cost per row in
  // microseconds, by path (spec/engine.md "Batch paths").
  std::string last_batch_path;
  int64_t last_batch_rows = 0;
  double last_batch_seconds = 0;
  std::vector<std::pair<std::string, double>> path_us_per_row;
};

// Thread-safe; the process's one instance.
class TransformReports {
 public:
  static TransformReports& Get();

  // Replaces every report with `reports`, read at `read_at_unix_s`.
  void Publish(std::vector<TransformReport> reports, double read_at_unix_s);
  // Forgets every report: this process no longer reads them (its staging
  // worker lost the election or stopped).
  void Clear();

  std::vector<TransformReport> Snapshot() const;
  // When the reports were read (Unix seconds); unset while there are none.
  std::optional<double> read_at() const;

 private:
  mutable std::mutex mu_;
  std::vector<TransformReport> reports_;
  std::optional<double> read_at_;
};

// Reads the reports of the catalog `options` names now, on a connection of
// its own that it closes before returning: for a caller that is not the
// elected staging worker (the port's `transform_reports` op).
Result<std::vector<TransformReport>> ReadTransformReportsNow(const ConnectOptions& options);

}  // namespace trellis
