#include "ops/engine_values.h"

namespace trellis::port {

protocol::Value OptionalValue(const std::optional<std::string>& v) {
  return v ? protocol::Value(*v) : protocol::Value();
}

protocol::Value OptionalValue(const std::optional<int64_t>& v) {
  return v ? protocol::Value(*v) : protocol::Value();
}

namespace {

protocol::Value Strings(const std::vector<std::string>& items) {
  protocol::Array out;
  for (const auto& s : items) out.emplace_back(s);
  return out;
}

protocol::Value OptionalStrings(const std::vector<std::optional<std::string>>& items) {
  protocol::Array out;
  for (const auto& s : items) out.push_back(OptionalValue(s));
  return out;
}

protocol::Value DrainFailure(const std::optional<DrainFailureStatus>& f) {
  if (!f) return protocol::Value();
  return protocol::MakeMap({
      {"unit", f->unit},
      {"failure_class", f->failure_class},
      {"since", f->since_us},
      {"attempts", f->attempts},
      {"sqlstate", OptionalValue(f->sqlstate)},
      {"message", f->message},
      {"parts", Strings(f->parts)},
  });
}

protocol::Value CaptureFailure(const std::optional<CaptureFailureStatus>& f) {
  if (!f) return protocol::Value();
  return protocol::MakeMap({
      {"kind", f->kind},
      {"since", OptionalValue(f->since_us)},
      {"message", f->message},
  });
}

protocol::Value SourceIndexGaps(const std::vector<SourceIndexGapStatus>& gaps) {
  protocol::Array out;
  for (const auto& g : gaps) {
    out.push_back(protocol::MakeMap({
        {"table", g.table},
        {"columns", Strings(g.columns)},
        {"role", g.role},
        {"opted_out", g.opted_out},
        {"fix", g.fix},
    }));
  }
  return out;
}

protocol::Value CorrectingNodes(const std::vector<CorrectingNodeStatus>& nodes) {
  protocol::Array out;
  for (const auto& n : nodes) {
    out.push_back(protocol::MakeMap({
        {"node", n.node},
        {"since", OptionalValue(n.since_us)},
        {"keys_remaining", n.keys_remaining},
    }));
  }
  return out;
}

protocol::Value DivergenceValue(const Divergence& d) {
  protocol::Array columns;
  for (const auto& c : d.columns) {
    columns.push_back(protocol::MakeMap({
        {"name", c.name},
        {"target", OptionalValue(c.target)},
        {"recomputed", OptionalValue(c.recomputed)},
    }));
  }
  return protocol::MakeMap({
      {"kind", d.kind},
      {"key", OptionalStrings(d.key)},
      {"columns", std::move(columns)},
      {"fix", d.fix},
  });
}

protocol::Value ReportValue(const SelfCheckReport& r) {
  protocol::Array divergences;
  for (const auto& d : r.divergences) divergences.push_back(DivergenceValue(d));
  protocol::Array failures;
  for (const auto& f : r.drain_failures) failures.push_back(DrainFailure(f));
  return protocol::MakeMap({
      {"outcome", r.outcome},
      {"rows_compared", r.rows_compared},
      {"divergence_count", r.divergence_count},
      {"truncated", r.truncated},
      {"unsettled_keys", r.unsettled_keys},
      {"failed_ranges", Strings(r.failed_ranges)},
      {"quarantined_columns", Strings(r.quarantined_columns)},
      {"divergences", std::move(divergences)},
      {"drain_failures", std::move(failures)},
  });
}

}  // namespace

protocol::Value ToValue(const SelfCheckJob& job) {
  return protocol::MakeMap({
      {"id", job.id},
      {"target", job.target},
      {"mode", job.mode},
      {"sample_size", OptionalValue(job.sample_size)},
      {"state", job.state},
      {"rows_compared", job.rows_compared},
      {"report", job.report ? ReportValue(*job.report) : protocol::Value()},
      {"error", OptionalValue(job.error)},
  });
}

protocol::Value ToValue(const ApplyResult& result) {
  return protocol::MakeMap({
      {"tag", result.tag},
      {"target", result.target},
      {"addresses", Strings(result.addresses)},
  });
}

namespace {

protocol::Value LastBatch(const std::optional<LastBatchStatus>& b) {
  if (!b) return protocol::Value();
  return protocol::MakeMap({
      {"path", b->path},
      {"rows", b->rows},
      {"ms", b->ms},
      {"at", b->at_us},
      {"reason", b->reason},
  });
}

protocol::Value PathCosts(const std::vector<PathCostStatus>& costs) {
  protocol::Array out;
  for (const auto& c : costs) {
    out.emplace_back(protocol::MakeMap({
        {"path", c.path},
        {"us_per_row", c.us_per_row},
        {"batches", c.batches},
        {"failed_at", OptionalValue(c.failed_at_us)},
    }));
  }
  return out;
}

}  // namespace

protocol::Value ToValue(const TransformStatus& s) {
  protocol::Array columns;
  for (const auto& c : s.columns) {
    columns.emplace_back(protocol::MakeMap({
        {"name", c.name},
        {"state", c.state},
        {"paused_kind", OptionalValue(c.paused_kind)},
        {"paused_reason", OptionalValue(c.paused_reason)},
    }));
  }
  return protocol::MakeMap({
      {"name", s.name},
      {"target_table", s.target_table},
      {"status", s.status},
      {"paused_kind", OptionalValue(s.paused_kind)},
      {"paused_reason", OptionalValue(s.paused_reason)},
      {"paused_at", OptionalValue(s.paused_at_us)},
      {"columns", std::move(columns)},
      {"backlog_pages", s.backlog_pages},
      {"backlog_keys", s.backlog_keys},
      {"capture_backlog", s.capture_backlog},
      {"capture_mode", s.capture_mode},
      {"capture_fallback", OptionalValue(s.capture_fallback)},
      {"backfill",
       protocol::MakeMap({
           {"rows_done", s.backfill.rows_done},
           {"rows_total", OptionalValue(s.backfill.rows_total)},
           {"started_at", OptionalValue(s.backfill.started_at_us)},
           {"finished_at", OptionalValue(s.backfill.finished_at_us)},
           {"columns", s.backfill.columns ? Strings(*s.backfill.columns) : protocol::Value()},
       })},
      {"last_applied_at", OptionalValue(s.last_applied_at_us)},
      {"drain_failure", DrainFailure(s.drain_failure)},
      {"held_keys", s.held_keys},
      {"capture_failure", CaptureFailure(s.capture_failure)},
      {"paused_upstream_columns", Strings(s.paused_upstream_columns)},
      {"source_index_gaps", SourceIndexGaps(s.source_index_gaps)},
      {"correcting", CorrectingNodes(s.correcting)},
      {"row_security_tables", Strings(s.row_security_tables)},
      {"last_batch", LastBatch(s.last_batch)},
      {"path_costs", PathCosts(s.path_costs)},
  });
}

protocol::Value ToValue(const Definition& d) {
  return protocol::MakeMap({
      {"name", d.name},
      {"target_table", d.target_table},
      {"statement", d.statement},
      {"status", d.status},
      {"created_at", OptionalValue(d.created_at_us)},
  });
}

protocol::Value ToValue(const QuarantineEntry& e) {
  return protocol::MakeMap({
      {"target", e.target},
      {"transform", e.transform},
      {"column", e.column},
      {"reason", e.reason},
      {"since", OptionalValue(e.since_us)},
      {"rows", e.rows},
  });
}

protocol::Value ToValue(const QuarantineSample& s) {
  protocol::Array key;
  for (const auto& k : s.key) key.emplace_back(k);
  protocol::Array inputs;
  for (const auto& [name, value] : s.inputs) {
    inputs.push_back(protocol::MakeMap({{"name", name}, {"value", OptionalValue(value)}}));
  }
  return protocol::MakeMap({
      {"target", s.target},
      {"key", std::move(key)},
      {"inputs", std::move(inputs)},
      {"sqlstate", OptionalValue(s.sqlstate)},
      {"error", s.error},
      {"since", s.since_us},
  });
}

}  // namespace trellis::port
