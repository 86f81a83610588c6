#include "drain/range_unit.h"

#include "drain/failure_class.h"
#include "drain/page_unit.h"
#include "sql/row_reader.h"

namespace trellis::drain {
namespace {

constexpr const char* kListSavepoint = "trellis_unit_keys";

}  // namespace

std::unique_ptr<RangeUnit> RangeUnit::Part(plan::KeyRange part) const {
  catalog::RangeJob job = job_;
  job.lo = std::move(part.lo);
  job.hi = std::move(part.hi);
  return std::make_unique<RangeUnit>(plan_, schema_, std::move(job));
}

std::string RangeUnit::Describe() const {
  return "key range (" + job_.lo.value_or("start") + ", " + job_.hi.value_or("end") + "]";
}

Result<long> RangeUnit::Apply(pg::Connection& conn) {
  if (job_.kind == catalog::JobKind::kBuildRange) {
    const plan::Bound append = plan_.AppendRange(range());
    auto appended = conn.QueryPrepared(append.text, append.params);
    if (!appended.ok()) return appended.status();
    return appended->affected;
  }
  const plan::Bound recompute = plan_.RecomputeRange(range(), job_.columns);
  auto applied = conn.QueryPrepared(recompute.text, recompute.params);
  if (!applied.ok()) return applied.status();
  sql::RowReader counts(applied.value(), 0);
  const long written = counts.Int64(0) + counts.Int64(1);
  if (!counts.status().ok()) return counts.status();
  return written;
}

Result<std::vector<std::unique_ptr<Unit>>> RangeUnit::SplitByUnitKeys(pg::Connection& conn) {
  std::vector<std::unique_ptr<Unit>> out;
  const std::string every = plan_.EveryUnitKeySql();
  // A first build appends to a target with no key yet: nothing to
  // recompute a key against, so it waits for a retry whole.
  if (every.empty() || job_.kind == catalog::JobKind::kBuildRange) return out;
  // Its own savepoint: a key expression that fails for a row (a group key
  // dividing by zero) fails the listing, which must leave the transaction
  // usable (a schema change pauses the transform in it) and the range
  // uncut, never count as narrowed.
  TRELLIS_RETURN_IF_ERROR(conn.Exec(std::string("SAVEPOINT ") + kListSavepoint));
  auto keys = conn.Query(every);
  if (!keys.ok()) {
    const FailureClass failure = Classify(keys.status());
    if (failure == FailureClass::kTransient) return keys.status();  // the caller rolls back
    TRELLIS_RETURN_IF_ERROR(conn.Exec(std::string("ROLLBACK TO SAVEPOINT ") + kListSavepoint));
    TRELLIS_RETURN_IF_ERROR(conn.Exec(std::string("RELEASE SAVEPOINT ") + kListSavepoint));
    if (failure == FailureClass::kDataError) return out;
    return keys.status();
  }
  TRELLIS_RETURN_IF_ERROR(conn.Exec(std::string("RELEASE SAVEPOINT ") + kListSavepoint));
  std::vector<std::string> all;
  all.reserve(keys->size());
  for (size_t r = 0; r < keys->size(); ++r) all.push_back(keys->text(r, 0));
  return CutIntoKeys(plan_, std::move(all));
}

Result<std::vector<std::unique_ptr<Unit>>> RangeUnit::Split(pg::Connection& conn) {
  std::vector<std::unique_ptr<Unit>> out;
  const plan::RangePlan* ranges = plan_.Ranges();
  if (!ranges) return SplitByUnitKeys(conn);  // built as one range: cut by its units
  const plan::Bound middle = ranges->MiddleKey(range());
  auto found = conn.Query(middle.text, middle.params);
  if (!found.ok()) return found.status();
  if (found->empty()) return out;  // one key (or none): cannot be cut
  out.push_back(Part(plan::KeyRange{job_.lo, found->at(0, 0)}));
  out.push_back(Part(plan::KeyRange{found->at(0, 0), job_.hi}));
  return out;
}

Result<std::optional<std::string>> RangeUnit::OneKey(pg::Connection& conn) const {
  // A part the executor could not cut holds one key: the first after lo.
  const plan::RangePlan* ranges = plan_.Ranges();
  if (!ranges) return std::optional<std::string>();  // built as one range: no key names it
  const plan::Bound first = ranges->KeyAfter(job_.lo, 1);
  auto found = conn.Query(first.text, first.params);
  if (!found.ok()) return found.status();
  if (found->empty()) return std::optional<std::string>();
  return found->at(0, 0);
}

Status RangeUnit::Complete(pg::Connection& conn) { return catalog::FinishJob(conn, schema_, job_); }

Status RangeUnit::Defer(pg::Connection& conn, const std::vector<const Unit*>& failed,
                        const Status& error) {
  // The other parts were written (a target without a key cannot take a
  // range twice; a rebuild's range could, but need not): the job is
  // replaced by one job per failing part, each waiting with backoff.
  // A part cut by unit keys (SplitByUnitKeys) is no range: the job waits
  // whole, and its retry narrows again to what fails then.
  std::vector<std::pair<std::optional<std::string>, std::optional<std::string>>> parts;
  for (const Unit* unit : failed) {
    const auto* part = dynamic_cast<const RangeUnit*>(unit);
    if (!part) {
      parts.assign(1, {job_.lo, job_.hi});
      break;
    }
    parts.emplace_back(part->job_.lo, part->job_.hi);
  }
  return catalog::DeferJob(conn, schema_, plan_.transform_id(), job_, parts, error.message());
}

}  // namespace trellis::drain
