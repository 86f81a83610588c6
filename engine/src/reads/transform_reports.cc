#include "reads/transform_reports.h"

#include <chrono>
#include <map>

#include "catalog/migrations.h"
#include "catalog/transform_names.h"
#include "grammar/address.h"
#include "log/component_log.h"
#include "reads/status.h"
#include "sql/quote.h"
#include "sql/row_reader.h"
#include "trellis/charging_metrics.h"

namespace trellis::reads {
namespace {

TransformReport FromStatus(std::string transform, const TransformStatus& s) {
  TransformReport r;
  r.transform = std::move(transform);
  r.status = s.status;
  r.backlog_pages = s.backlog_pages;
  r.backlog_keys = s.backlog_keys;
  r.capture_backlog = s.capture_backlog;
  r.held_keys = s.held_keys;
  for (const auto& c : s.columns) {
    if (c.state == "paused" && c.paused_kind == std::optional<std::string>("quarantine")) {
      ++r.quarantined_columns;
    }
  }
  r.drain_failure = s.drain_failure.has_value();
  r.capture_disrupted = s.capture_failure.has_value();
  if (s.last_batch) {
    r.last_batch_path = s.last_batch->path;
    r.last_batch_rows = s.last_batch->rows;
    r.last_batch_seconds = s.last_batch->ms / 1000;
  }
  for (const auto& c : s.path_costs) {
    if (c.batches > 0) r.path_us_per_row.emplace_back(c.path, c.us_per_row);
  }
  return r;
}

}  // namespace

Result<std::vector<TransformReport>> ReadTransformReports(pg::Connection& conn,
                                                          const std::string& schema) {
  TRELLIS_RETURN_IF_ERROR(catalog::CheckMigrated(conn, schema));
  // Lag: the server's now() less the oldest page of the transform or of any
  // of its stages (its status folds them; catalog/composite.h). Only the
  // transforms users named: a stage has an owner.
  auto rows = conn.Query(sql::WithSchema(R"sql(
SELECT u.target_name,
       (SELECT (j.report->>'divergence_count')::bigint FROM {schema}.self_check_jobs j
        WHERE j.transform_id = u.id AND j.state = 'done'),
       greatest(0, coalesce((extract(epoch FROM now() - (
         SELECT min(p.created_at) FROM {schema}.pages p
         WHERE p.transform_id = u.id OR p.transform_id IN (
           SELECT s.id FROM {schema}.transforms s WHERE s.owner_id = u.id))) * 1000)::bigint, 0)),
       EXISTS (SELECT 1 FROM {schema}.self_check_jobs j
               WHERE j.transform_id = u.id AND j.state IN ('queued', 'running'))
FROM {schema}.transforms u
WHERE u.owner_id IS NULL ORDER BY u.target_name)sql",
                                         schema));
  if (!rows.ok()) return rows.status();
  std::vector<TransformReport> out;
  for (size_t r = 0; r < rows->size(); ++r) {
    sql::RowReader row(rows.value(), r);
    std::string name = row.Text(0);
    std::optional<int64_t> divergences = row.OptionalInt64(1);
    const int64_t lag_ms = row.Int64(2);
    const bool check_pending = row.Bool(3);
    if (!row.status().ok()) return row.status();
    std::string rendered = grammar::RenderTransformName(name);
    auto status = ReadStatus(conn, schema, rendered);
    if (!status.ok()) {
      if (status.status().code() == Code::kNotFound) continue;  // dropped since
      return status.status();
    }
    out.push_back(FromStatus(std::move(name), status.value()));
    out.back().name = std::move(rendered);
    out.back().lag_seconds = static_cast<double>(lag_ms) / 1000.0;
    out.back().self_check_divergences = divergences;
    out.back().self_check_pending = check_pending;
  }
  return out;
}

Status PublishTransformReports(pg::Connection& conn, const std::string& schema) {
  auto names = catalog::TransformNames(conn, schema);
  if (!names.ok()) return names.status();
  ChargingMetrics::Get().Know(names.value());
  const auto started = std::chrono::steady_clock::now();
  auto reports = ReadTransformReports(conn, schema);
  if (!reports.ok()) return reports.status();
  log::Component("trellis::reads")
      ->debug("transform reports: {} transforms read in {} ms", reports->size(),
              std::chrono::duration_cast<std::chrono::milliseconds>(
                  std::chrono::steady_clock::now() - started)
                  .count());
  // A check started since the last read replaced the finished job: the
  // gauge keeps the count it had until the new check finishes, rather than
  // lose its series (an alert on it would resolve for nothing).
  std::map<std::string, int64_t> last_counts;
  for (const auto& old : TransformReports::Get().Snapshot()) {
    if (old.self_check_divergences) last_counts[old.transform] = *old.self_check_divergences;
  }
  for (auto& report : reports.value()) {
    if (report.self_check_divergences || !report.self_check_pending) continue;
    if (auto last = last_counts.find(report.transform); last != last_counts.end()) {
      report.self_check_divergences = last->second;
    }
  }
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  TransformReports::Get().Publish(std::move(reports.value()),
                                  std::chrono::duration<double>(now).count());
  return Status::OK();
}

}  // namespace trellis::reads
