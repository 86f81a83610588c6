#include "drain/self_check_runner.h"

#include <algorithm>
#include <cmath>

#include "capture/slot.h"
#include "catalog/composite.h"
#include "grammar/address.h"
#include "plan/bind.h"
#include "sql/key_text.h"
#include "sql/quote.h"
#include "sql/row_reader.h"

namespace trellis::drain {
namespace {

constexpr auto kIdleClaimEvery = std::chrono::milliseconds(500);
constexpr auto kSettleEvery = std::chrono::milliseconds(100);
// In logical mode, a key found different with nothing pending is reported
// once this many later rounds found the same rows (and the same target row
// version), each after the slot had staged every write the round before
// saw (spec/engine.md "Self-check in logical mode").
constexpr int kLogicalConfirmations = 3;
constexpr size_t kSettleBatch = 5000;

// The columns the check compares: every value column but the quarantined
// ones, whose values are known to be withheld (reported as such), and the
// hidden ones (a group's running state), which the definition does not
// name: its visible columns are computed from them.
std::vector<std::string> ComparedColumns(const catalog::Transform& t,
                                         std::vector<std::string>& quarantined) {
  std::vector<std::string> out;
  for (const auto& c : t.columns) {
    if (c.role == catalog::ColumnRole::kHidden) continue;
    if (c.state != ColumnState::kLive && c.paused_kind == PauseKind::kQuarantine) {
      quarantined.push_back(c.name);
    } else {
      out.push_back(c.name);
    }
  }
  return out;
}

// What repairs a divergence of `part` of `owner`: RESUME of a paused column
// it involves, else a rebuild of the owner's target (which rebuilds every
// stage). A stage's divergence says so, since its key is the stage's.
std::string FixFor(const catalog::Transform& owner, const catalog::Transform& t,
                   const Divergence& d) {
  const std::string name = grammar::RenderTransformName(owner.name());
  for (const auto& column : d.columns) {
    if (t.owner_id) break;  // a stage's column is not the user's to RESUME
    for (const auto& c : t.columns) {
      if (c.name == column.name && c.state != ColumnState::kLive) {
        return "RESUME TRANSFORM " + grammar::RenderAddress(t.name(), c.name);
      }
    }
  }
  std::string quoted;  // the name as an Elixir string
  for (char ch : name) {
    if (ch == '"' || ch == '\\' || ch == '#') quoted += '\\';
    quoted += ch;
  }
  const std::string fix = "Trellis.request_backfill(handle, \"" + quoted + "\")";
  if (!t.owner_id) return fix;
  return fix + " (the difference is in stage " + std::to_string(t.stage_order) +
         " of the transform, which it rebuilds with the rest)";
}

}  // namespace

Result<bool> SelfCheckRunner::Step(pg::Connection& conn, const std::string& schema,
                                   UnitExecutor& executor) {
  if (!active_) return Claim(conn, schema);
  if (!active_->compared) {
    return active_->job.mode == "sample" ? Sample(conn, schema)
                                         : CompareRange(conn, schema, executor);
  }
  return Settle(conn, schema);
}

Result<bool> SelfCheckRunner::Claim(pg::Connection& conn, const std::string& schema) {
  const auto now = std::chrono::steady_clock::now();
  if (now < next_claim_) return false;
  next_claim_ = now + kIdleClaimEvery;
  auto claimed = ClaimSelfCheckJob(conn, schema, worker_id_);
  if (!claimed.ok()) return claimed.status();
  if (!claimed.value()) return false;
  Active active;
  active.job = **claimed;
  auto t = catalog::LoadTransformById(conn, schema, active.job.transform_id);
  if (!t.ok()) {
    if (t.status().code() == Code::kNotFound) return true;  // dropped: the job went with it
    return t.status();
  }
  auto composite = catalog::LoadComposite(conn, schema, std::move(t.value()));
  if (!composite.ok()) return composite.status();
  active.owner = composite->owner;
  active.next = std::move(composite->stages);
  active.next.push_back(std::move(composite->owner));
  active_ = std::move(active);
  if (active_->owner.state == TransformState::kPaused) {
    TRELLIS_RETURN_IF_ERROR(Fail(conn, schema,
                                 "the transform " +
                                     grammar::RenderTransformName(active_->owner.name()) +
                                     " is paused: RESUME it, then start the check again"));
    return true;
  }
  catalog::Transform first = std::move(active_->next.front());
  active_->next.erase(active_->next.begin());
  const Status begun = BeginPart(schema, std::move(first));
  if (!begun.ok()) TRELLIS_RETURN_IF_ERROR(Fail(conn, schema, begun.message()));
  return true;
}

Status SelfCheckRunner::BeginPart(const std::string& schema, catalog::Transform part) {
  Active& a = *active_;
  auto plan = plan::Bind(part, schema);
  if (!plan.ok()) return plan.status();
  a.transform = std::move(part);
  a.plan = std::move(plan.value());
  a.statements = std::make_unique<SelfCheckStatements>(
      *a.plan, ComparedColumns(a.transform, a.report.quarantined_columns), schema);
  a.cursor.reset();
  a.compared = false;
  a.findings = SelfCheckFindings{};
  return Status::OK();
}

Result<bool> SelfCheckRunner::Progress(pg::Connection& conn, const std::string& schema,
                                       int64_t rows) {
  auto held = AddSelfCheckProgress(conn, schema, active_->job.id, worker_id_, rows);
  if (!held.ok()) return held.status();
  if (!held.value()) active_.reset();  // replaced, taken over, or its transform dropped
  return held.value();
}

Result<bool> SelfCheckRunner::CompareRange(pg::Connection& conn, const std::string& schema,
                                           UnitExecutor& executor) {
  Active& a = *active_;
  auto tx = pg::Transaction::Begin(conn);
  if (!tx.ok()) return tx.status();
  // A plan that does not cut its key into ranges is checked as one range.
  plan::KeyRange range{a.cursor, std::nullopt};
  if (const plan::RangePlan* ranges = a.plan->Ranges()) {
    const plan::Bound after = ranges->KeyAfter(a.cursor, kSelfCheckRangeKeys);
    auto hi = conn.QueryPrepared(after.text, after.params);
    if (!hi.ok()) return hi.status();
    if (!hi->empty()) range.hi = hi->at(0, 0);
  }
  SelfCheckRangeUnit unit(*a.plan, *a.statements, range, a.findings);
  auto ran = executor.Run(conn, schema, a.transform, unit, RunOptions{.pause_alone = true});
  if (!ran.ok()) return ran.status();
  if (ran->outcome == UnitOutcome::kPauseAlone || ran->outcome == UnitOutcome::kPaused) {
    const Status error = ran->error;
    tx.value().reset();  // roll back
    TRELLIS_RETURN_IF_ERROR(executor.PauseAlone(conn, schema, a.transform, error));
    auto failed_tx = pg::Transaction::Begin(conn);
    if (!failed_tx.ok()) return failed_tx.status();
    TRELLIS_RETURN_IF_ERROR(Fail(conn, schema,
                                 "the transform was paused for a schema change of its source "
                                 "while it was checked: " +
                                     error.message()));
    TRELLIS_RETURN_IF_ERROR(failed_tx.value()->Commit());
    return true;
  }
  auto held = Progress(conn, schema, ran->rows);
  if (!held.ok()) return held.status();
  if (!held.value()) return true;
  TRELLIS_RETURN_IF_ERROR(tx.value()->Commit());
  a.rows += ran->rows;
  a.cursor = range.hi;
  if (!range.hi) {
    a.compared = true;
    a.settle_deadline = std::chrono::steady_clock::now() + kSelfCheckSettleBound;
  }
  return true;
}

Result<bool> SelfCheckRunner::Sample(pg::Connection& conn, const std::string& schema) {
  Active& a = *active_;
  auto estimate = conn.Query(a.plan->EstimateKeysSql());
  if (!estimate.ok()) return estimate.status();
  auto estimated = sql::ScalarInt64(estimate.value());
  if (!estimated.ok()) return estimated.status();
  const double keys = std::max(1.0, static_cast<double>(estimated.value()));
  // Twice the sample's share of the rows, so a sample of n rows yields about
  // n keys on each side before the LIMIT.
  const double percent =
      std::min(100.0, 100.0 * 2.0 * static_cast<double>(a.job.sample_size) / keys);
  const std::string size = std::to_string(a.job.sample_size);
  auto target = conn.Query(a.statements->SampleTargetKeysSql(), {std::to_string(percent), size});
  if (!target.ok()) return target.status();
  for (size_t r = 0; r < target->size(); ++r) a.findings.candidates.insert(target->text(r, 0));
  const plan::Bound source = a.plan->SampleUnitKeys(percent, a.job.sample_size);
  auto definition = conn.Query(source.text, source.params);
  if (!definition.ok()) return definition.status();
  for (size_t r = 0; r < definition->size(); ++r) {
    a.findings.candidates.insert(definition->text(r, 0));
  }
  const auto sampled = static_cast<int64_t>(a.findings.candidates.size());
  auto held = Progress(conn, schema, sampled);
  if (!held.ok()) return held.status();
  if (!held.value()) return true;
  a.rows += sampled;
  a.compared = true;
  a.settle_deadline = std::chrono::steady_clock::now() + kSelfCheckSettleBound;
  return true;
}

Result<bool> SelfCheckRunner::Settle(pg::Connection& conn, const std::string& schema) {
  Active& a = *active_;
  const auto now = std::chrono::steady_clock::now();
  if (now < a.next_settle) return false;
  a.next_settle = now + kSettleEvery;
  std::vector<std::string> batch;
  for (const auto& key : a.findings.candidates) {
    if (batch.size() == kSettleBatch) break;
    batch.push_back(key);
  }
  if (!batch.empty()) {
    // Logical capture: writes the recheck's snapshot sees may still be in
    // the slot, where no pending-work test can see them. Read before the
    // recheck, so it is at most what that snapshot saw staged.
    auto staged = capture::StagedPosition(conn, schema);
    if (!staged.ok()) return staged.status();
    std::optional<uint64_t> after_recheck;
    // One statement: one snapshot for the pending work and both sides.
    auto rows = conn.QueryPrepared(a.statements->RecheckKeysSql(), {sql::KeyListLiteral(batch)});
    if (!rows.ok()) return rows.status();
    const auto& columns = a.statements->columns();
    for (size_t r = 0; r < rows->size(); ++r) {
      const std::string key = rows->text(r, 0);
      if (rows->text(r, 1) == "t") continue;  // still behind: look again later
      const bool in_target = rows->text(r, 2) == "t";
      const bool in_definition = rows->text(r, 3) == "t";
      a.findings.candidates.erase(key);
      if (!in_target && !in_definition) continue;  // gone from both: it was lag
      // A held key's row is kept as it was on purpose (drain/held_keys.h);
      // status counts it, and release_key/4 recomputes it.
      if (rows->text(r, 4) == "t") continue;
      Divergence d;
      d.kind = !in_target ? "missing" : !in_definition ? "extra" : "differs";
      for (size_t c = 0; c < columns.size(); ++c) {
        const size_t at = SelfCheckStatements::kRecheckLeading + 3 * c;
        if (in_target && in_definition && rows->text(r, at + 2) != "t") continue;
        d.columns.push_back(DivergentColumn{columns[c], rows->at(r, at), rows->at(r, at + 1)});
      }
      if (in_target && in_definition && d.columns.empty()) continue;  // it was lag
      if (staged.value()) {
        // Judged only once the slot has staged every write the snapshot of
        // an earlier round that found the same rows saw: such a write made
        // a page for the key, whose drain would have changed the target
        // row since (spec/engine.md "Self-check", "In logical mode"). The
        // target row's version is part of what must be the same: values
        // alone come back when writes flip a row and flip it back (a
        // drain each way) while the last flip waits in the slot.
        std::string seen =
            d.kind + '\0' +
            rows->at(r, SelfCheckStatements::kRecheckLeading + 3 * columns.size()).value_or("\1");
        for (const auto& c : d.columns) {
          seen += std::string(1, '\0') + c.name + '\0' + c.target.value_or("\1") + '\0' +
                  c.recomputed.value_or("\1");
        }
        // Per target row: a unit may hold many, each with its own values.
        const std::string row_key = key + '\0' + rows->text(r, 5);
        auto& suspect = a.findings.suspects[row_key];
        const bool changed = suspect.seen != seen || suspect.lsn == 0;
        const bool caught_up = !changed && *staged.value() >= suspect.lsn;
        if (changed || !caught_up || ++suspect.confirmed < kLogicalConfirmations) {
          if (changed || caught_up) {
            // A new look to wait for: the slot must stage every write this
            // round's snapshot saw before the next round may confirm it.
            if (!after_recheck) {
              auto lsn = capture::InsertPosition(conn);
              if (!lsn.ok()) return lsn.status();
              after_recheck = lsn.value();
            }
            suspect.lsn = *after_recheck;
          }
          if (changed) {
            suspect.seen = std::move(seen);
            suspect.confirmed = 0;
          }
          a.findings.candidates.insert(key);
          continue;
        }
        a.findings.suspects.erase(row_key);
      }
      if (!a.findings.reported.insert(rows->text(r, 5)).second) continue;
      ++a.report.divergence_count;
      if (a.report.divergences.size() < kSelfCheckReportLimit) {
        d.key = sql::ParseKeyLiteral(rows->text(r, 5));  // the row's own key
        d.fix = FixFor(a.owner, a.transform, d);
        a.report.divergences.push_back(std::move(d));
      } else {
        a.report.truncated = true;
      }
    }
  }
  if (!a.findings.candidates.empty() && now < a.settle_deadline) return true;
  if (!a.next.empty()) {
    // The part is settled (what stays unsettled is counted): the next one.
    a.unsettled += static_cast<int64_t>(a.findings.candidates.size());
    for (auto& range : a.findings.failed_ranges) a.failed_ranges.push_back(std::move(range));
    catalog::Transform part = std::move(a.next.front());
    a.next.erase(a.next.begin());
    const Status begun = BeginPart(schema, std::move(part));
    if (!begun.ok()) TRELLIS_RETURN_IF_ERROR(Fail(conn, schema, begun.message()));
    return true;
  }
  auto tx = pg::Transaction::Begin(conn);
  if (!tx.ok()) return tx.status();
  TRELLIS_RETURN_IF_ERROR(Finish(conn, schema));
  TRELLIS_RETURN_IF_ERROR(tx.value()->Commit());
  active_.reset();
  return true;
}

Status SelfCheckRunner::Finish(pg::Connection& conn, const std::string& schema) {
  SelfCheckReport& report = active_->report;
  report.rows_compared = active_->rows;
  report.unsettled_keys =
      active_->unsettled + static_cast<int64_t>(active_->findings.candidates.size());
  report.failed_ranges = std::move(active_->failed_ranges);
  for (auto& range : active_->findings.failed_ranges) {
    report.failed_ranges.push_back(std::move(range));
  }
  report.outcome = report.divergence_count > 0                                  ? "diverged"
                   : report.unsettled_keys > 0 || !report.failed_ranges.empty() ? "unsettled"
                                                                                : "clean";
  return FinishSelfCheckJob(conn, schema, active_->job.id, worker_id_, report);
}

Status SelfCheckRunner::Fail(pg::Connection& conn, const std::string& schema,
                             const std::string& error) {
  const int64_t id = active_->job.id;
  active_.reset();
  return FailSelfCheckJob(conn, schema, id, worker_id_, error);
}

}  // namespace trellis::drain
