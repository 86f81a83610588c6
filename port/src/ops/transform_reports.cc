// transform_reports: what the catalog says of every transform now, as the
// elected staging worker reports it in the trellis_transform_* gauges, read
// on a connection of the op's own (mix trellis.status reads the lag here).
#include "trellis/transform_reports.h"
#include "op_registry.h"

namespace trellis::port {
namespace {

protocol::Value ReportValue(const TransformReport& r) {
  return protocol::MakeMap({
      {"name", r.name},
      {"transform", r.transform},
      {"status", r.status},
      {"lag_ms", static_cast<int64_t>(r.lag_seconds * 1000.0 + 0.5)},
      {"backlog_pages", r.backlog_pages},
      {"backlog_keys", r.backlog_keys},
      {"capture_backlog", r.capture_backlog},
      {"held_keys", r.held_keys},
      {"quarantined_columns", r.quarantined_columns},
      {"drain_failure", r.drain_failure},
      {"capture_disrupted", r.capture_disrupted},
      {"self_check_divergences",
       r.self_check_divergences ? protocol::Value(*r.self_check_divergences) : protocol::Value()},
  });
}

// The read needs SQL of its own (the lag), and a Session lends no raw
// connection, so it opens one for the call and closes it: a cost for a
// command-line read, not for a hot path (the gauges come from the staging
// worker's connection).
Result<protocol::Value> TransformReportsOp(Session& session, const protocol::Map&) {
  auto reports = ReadTransformReportsNow(session.options());
  if (!reports.ok()) return reports.status();
  protocol::Array out;
  for (const auto& r : reports.value()) out.push_back(ReportValue(r));
  return protocol::Value(std::move(out));
}

const OpRegistrar kTransformReports(DatabaseOp("transform_reports", TransformReportsOp));

}  // namespace
}  // namespace trellis::port
