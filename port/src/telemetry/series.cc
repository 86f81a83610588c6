#include "telemetry/series.h"

#include "trellis/charging_metrics.h"
#include "trellis/engine_metrics.h"
#include "trellis/transform_reports.h"

namespace trellis::port::telemetry {
namespace {

// Call latency buckets, in seconds: 100 us (an inline op) to 30 s (the
// default budget).
const std::vector<double> kLatencyBuckets = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                             0.01,   0.025,   0.05,   0.1,   0.25,   0.5,
                                             1,      2.5,     5,      10,    30};

template <typename T>
double Load(const std::atomic<T>& value) {
  return static_cast<double>(value.load(std::memory_order_relaxed));
}

EngineMetrics& Engine() { return GlobalEngineMetrics(); }

}  // namespace

// clang-format off
const CounterFamily kCalls("trellis_calls_total", "Calls the port program answered, by op and result (ok, an error code, or cancelled).", {"op", "result"});
const HistogramFamily kCallDuration("trellis_call_duration_seconds", "Time from reading a request to answering it, by op.", {"op"}, kLatencyBuckets);

const GaugeFamily kPoolOpen("trellis_pool_connections_open", "Database sessions the call pool holds open.");
const GaugeFamily kPoolInUse("trellis_pool_connections_in_use", "Database sessions of the call pool running a call.");
const GaugeFamily kPoolMax("trellis_pool_connections_max", "The call pool's size (pool_size; 0 before connect).");

const CounterFamily kFrames("trellis_port_frames_total", "Protocol frames, by direction (in: BEAM to port, out: port to BEAM).", {"direction"});
const CounterFamily kBytes("trellis_port_bytes_total", "Protocol bytes, length prefixes included, by direction.", {"direction"});

const CounterFamily kLogLines("trellis_log_lines_total", "Engine log lines sent to the BEAM, by level.", {"level"});
const CounterFamily kLogLinesDropped("trellis_log_lines_dropped_total", "Engine log lines dropped because the BEAM did not read them in time.");

namespace {

const CallbackFamily kWorkers("trellis_workers", "Background worker threads running in this handle, by role.", MetricType::kGauge, {"role"}, [] {
  return std::vector<CallbackFamily::Sample>{{{"drain"}, Load(Engine().drain_workers)}, {{"staging"}, Load(Engine().staging_workers)}};
});
const CallbackFamily kStagingElected("trellis_staging_elected", "1 while this handle's staging worker holds the instance's staging election, else 0.", MetricType::kGauge, [] { return Load(Engine().staging_elected); });
const CallbackFamily kSlotLagBytes("trellis_capture_slot_lag_bytes", "Logical capture: flushed WAL past what the staging worker has staged from the replication slot (0 in triggers mode and on a handle not elected).", MetricType::kGauge, [] { return Load(Engine().slot_lag_bytes); });
const CallbackFamily kSlotLagSeconds("trellis_capture_slot_lag_seconds", "Logical capture: how long the slot's staged position has not moved while there is WAL to read.", MetricType::kGauge, [] { return Load(Engine().slot_lag_ms) / 1000; });
const CallbackFamily kSlotRetainedBytes("trellis_capture_slot_retained_bytes", "Logical capture: WAL the replication slot holds back on the server.", MetricType::kGauge, [] { return Load(Engine().slot_retained_bytes); });
const CallbackFamily kSlotsReplaced("trellis_capture_slots_replaced_total", "Logical capture: replication slots found lost (dropped, invalidated) and replaced, each rebuilding every transform.", MetricType::kCounter, [] { return Load(Engine().slots_replaced); });
const CallbackFamily kPublicationRepairs("trellis_capture_publication_repairs_total", "Logical capture: sources published again after being removed from the publication by hand, each rebuilding its readers.", MetricType::kCounter, [] { return Load(Engine().publication_repairs); });
const CallbackFamily kPagesDrained("trellis_drain_pages_total", "Ledger pages drained into their targets.", MetricType::kCounter, [] { return Load(Engine().pages_drained); });
const CallbackFamily kKeysDrained("trellis_drain_keys_total", "Target keys recomputed by drained pages.", MetricType::kCounter, [] { return Load(Engine().keys_drained); });
const CallbackFamily kPagesFailed("trellis_drain_pages_failed_total", "Ledger pages whose drain failed and was scheduled for a retry.", MetricType::kCounter, [] { return Load(Engine().pages_failed); });
const CallbackFamily kCaptureRowsStaged("trellis_capture_rows_staged_total", "Capture rows the staging worker turned into ledger pages.", MetricType::kCounter, [] { return Load(Engine().capture_rows_staged); });
const CallbackFamily kStageWritesStaged("trellis_stage_writes_staged_total", "Capture rows of a drain's writes to a target another transform reads, staged for that reader in the drain's own transaction.", MetricType::kCounter, [] { return Load(Engine().stage_writes_staged); });
const CallbackFamily kStageWakes("trellis_stage_wakes_total", "Drains that woke the handle's staging worker at once, because another transform (the next stage, or a chain's next link) reads their target.", MetricType::kCounter, [] { return Load(Engine().stage_wakes); });
const CallbackFamily kRemoteWakes("trellis_remote_wakes_total", "Wake-ups of this handle's workers sent by another handle's commit (LISTEN/NOTIFY), by the role woken: staging (a stage drained elsewhere) or drain (pages staged elsewhere).", MetricType::kCounter, {"role"}, [] {
  return std::vector<CallbackFamily::Sample>{{{"drain"}, Load(Engine().remote_drain_wakes)}, {{"staging"}, Load(Engine().remote_staging_wakes)}};
});
const CallbackFamily kDrainBatches("trellis_drain_batches_total", "Batches of ledger pages drained, by the path the chooser took: delta, recompute or rebuild (spec/engine.md \"Batch paths\").", MetricType::kCounter, {"path"}, [] {
  return std::vector<CallbackFamily::Sample>{{{"delta"}, Load(Engine().batches_delta)}, {{"recompute"}, Load(Engine().batches_recompute)}, {{"rebuild"}, Load(Engine().batches_rebuild)}};
});
const CallbackFamily kRebuildFallbacks("trellis_drain_rebuild_fallbacks_total", "Rebuilds that failed, whose batch went by its pages instead (narrowed to the failing keys).", MetricType::kCounter, [] { return Load(Engine().rebuild_fallbacks); });
const CallbackFamily kBackfillRows("trellis_backfill_rows_total", "Target rows written by backfill chunks.", MetricType::kCounter, [] { return Load(Engine().backfill_rows); });


// Failures charged, per transform (spec/engine.md "Charging a failure").
std::vector<CallbackFamily::Sample> Charges(uint64_t ChargeCounts::*field) {
  std::vector<CallbackFamily::Sample> out;
  for (const auto& [transform, counts] : ChargingMetrics::Get().Snapshot()) out.push_back({{transform}, static_cast<double>(counts.*field)});
  return out;
}
const CallbackFamily kQuarantinedColumns("trellis_quarantined_columns_total", "Columns this handle's drain workers put in quarantine, by transform.", MetricType::kCounter, {"transform"}, [] { return Charges(&ChargeCounts::quarantined_columns); });
const CallbackFamily kQuarantinedRows("trellis_quarantined_rows_total", "Failing rows this handle's drain workers recorded in a column's quarantine, by transform.", MetricType::kCounter, {"transform"}, [] { return Charges(&ChargeCounts::quarantined_rows); });
const CallbackFamily kHeldKeys("trellis_held_keys_total", "Keys this handle's drain workers began to hold, by transform.", MetricType::kCounter, {"transform"}, [] { return Charges(&ChargeCounts::held_keys); });
const CallbackFamily kDrainFailures("trellis_drain_failures_total", "Failures of work charged to nothing (drain failures) this handle recorded, by transform.", MetricType::kCounter, {"transform"}, [] { return Charges(&ChargeCounts::drain_failures); });


// What the catalog says of each transform now: read every few seconds by the
// handle whose staging worker holds the instance's election, and by no other
// (trellis/transform_reports.h), so each transform is one series per fleet.
std::vector<CallbackFamily::Sample> Reports(double (*field)(const TransformReport&)) {
  std::vector<CallbackFamily::Sample> out;
  for (const auto& report : TransformReports::Get().Snapshot()) out.push_back({{report.transform}, field(report)});
  return out;
}
// Every state, 1 for the one the transform is in, so a state's series exists before it is entered.
const std::vector<std::string> kStates = {"waiting_to_backfill", "backfilling", "catching_up", "live", "paused"};
std::vector<CallbackFamily::Sample> States() {
  std::vector<CallbackFamily::Sample> out;
  for (const auto& report : TransformReports::Get().Snapshot()) {
    for (const auto& state : kStates) out.push_back({{report.transform, state}, report.status == state ? 1.0 : 0.0});
  }
  return out;
}
const CallbackFamily kTransformStatus("trellis_transform_status", "1 for the state each transform is in (waiting_to_backfill, backfilling, catching_up, live, paused), 0 for the others.", MetricType::kGauge, {"transform", "status"}, States);
const CallbackFamily kTransformLag("trellis_transform_lag_seconds", "Seconds since the oldest write still waiting in the transform's ledger was staged; 0 when none waits.", MetricType::kGauge, {"transform"}, [] { return Reports([](const TransformReport& r) { return r.lag_seconds; }); });
const CallbackFamily kTransformBacklogPages("trellis_transform_backlog_pages", "Ledger pages waiting to be drained, by transform.", MetricType::kGauge, {"transform"}, [] { return Reports([](const TransformReport& r) { return static_cast<double>(r.backlog_pages); }); });
const CallbackFamily kTransformBacklogKeys("trellis_transform_backlog_keys", "Target keys in the ledger pages waiting to be drained, by transform.", MetricType::kGauge, {"transform"}, [] { return Reports([](const TransformReport& r) { return static_cast<double>(r.backlog_keys); }); });
const CallbackFamily kTransformCaptureBacklog("trellis_transform_capture_backlog_rows", "Capture rows of the transform's sources not staged yet.", MetricType::kGauge, {"transform"}, [] { return Reports([](const TransformReport& r) { return static_cast<double>(r.capture_backlog); }); });
const CallbackFamily kTransformHeldKeys("trellis_transform_held_keys", "Keys the transform holds now (failed with nothing chargeable to a column).", MetricType::kGauge, {"transform"}, [] { return Reports([](const TransformReport& r) { return static_cast<double>(r.held_keys); }); });
const CallbackFamily kTransformQuarantined("trellis_transform_quarantined_columns", "Columns of the transform in quarantine now.", MetricType::kGauge, {"transform"}, [] { return Reports([](const TransformReport& r) { return static_cast<double>(r.quarantined_columns); }); });
const CallbackFamily kTransformDrainFailure("trellis_transform_drain_failure", "1 while a drain failure of the transform is open (work failing with nothing charged or paused).", MetricType::kGauge, {"transform"}, [] { return Reports([](const TransformReport& r) { return r.drain_failure ? 1.0 : 0.0; }); });
const CallbackFamily kTransformCaptureDisrupted("trellis_transform_capture_disrupted", "1 while capture of a table the transform reads is disrupted (changed outside Trellis).", MetricType::kGauge, {"transform"}, [] { return Reports([](const TransformReport& r) { return r.capture_disrupted ? 1.0 : 0.0; }); });
const CallbackFamily kTransformSelfCheckDivergences("trellis_transform_self_check_divergences", "Divergences the transform's latest finished self-check found (no series before one finished).", MetricType::kGauge, {"transform"}, [] {
  std::vector<CallbackFamily::Sample> out;
  for (const auto& report : TransformReports::Get().Snapshot()) {
    if (report.self_check_divergences) out.push_back({{report.transform}, static_cast<double>(*report.self_check_divergences)});
  }
  return out;
});
// The drain's last batch of each transform, labelled with its path.
std::vector<CallbackFamily::Sample> LastBatches(double (*field)(const TransformReport&)) {
  std::vector<CallbackFamily::Sample> out;
  for (const auto& report : TransformReports::Get().Snapshot()) {
    if (!report.last_batch_path.empty()) out.push_back({{report.transform, report.last_batch_path}, field(report)});
  }
  return out;
}
const CallbackFamily kTransformLastBatchSeconds("trellis_transform_last_batch_seconds", "How long the drain's last batch of the transform took, labelled with its path (delta, recompute, rebuild).", MetricType::kGauge, {"transform", "path"}, [] { return LastBatches([](const TransformReport& r) { return r.last_batch_seconds; }); });
const CallbackFamily kTransformLastBatchRows("trellis_transform_last_batch_rows", "The rows of the drain's last batch of the transform (keys; a rebuild's target rows), labelled with its path.", MetricType::kGauge, {"transform", "path"}, [] { return LastBatches([](const TransformReport& r) { return static_cast<double>(r.last_batch_rows); }); });
// In seconds, Prometheus's base unit (promtool refuses "_us_" in a name).
const CallbackFamily kTransformPathCost("trellis_transform_path_cost_seconds_per_row", "Each batch path's measured cost for the transform, in seconds per row (per key; per target row for rebuild), a decaying average.", MetricType::kGauge, {"transform", "path"}, [] {
  std::vector<CallbackFamily::Sample> out;
  for (const auto& report : TransformReports::Get().Snapshot()) {
    for (const auto& [path, us] : report.path_us_per_row) out.push_back({{report.transform, path}, us / 1e6});
  }
  return out;
});
const CallbackFamily kTransformsReadAt("trellis_transform_reports_timestamp_seconds", "When this handle last read the transform reports (Unix time); no series while it reads none.", MetricType::kGauge, std::vector<std::string>{}, [] {
  std::vector<CallbackFamily::Sample> out;
  if (auto at = TransformReports::Get().read_at()) out.push_back({{}, *at});
  return out;
});

}  // namespace
// clang-format on

}  // namespace trellis::port::telemetry
