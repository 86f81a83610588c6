#include "drain/range_unit.h"

#include "sql/quote.h"

namespace trellis::drain {

std::unique_ptr<RangeUnit> RangeUnit::BuildRange(const plan::TransformPlan& plan,
                                                 std::string schema, std::string job_id,
                                                 int attempts, plan::KeyRange range) {
  std::unique_ptr<RangeUnit> unit(new RangeUnit(plan, Mode::kAppend, std::move(range)));
  unit->schema_ = std::move(schema);
  unit->job_id_ = std::move(job_id);
  unit->attempts_ = attempts;
  return unit;
}

std::unique_ptr<RangeUnit> RangeUnit::RebuildChunk(
    const plan::TransformPlan& plan, plan::KeyRange range,
    std::optional<std::vector<std::string>> columns) {
  std::unique_ptr<RangeUnit> unit(new RangeUnit(plan, Mode::kRecompute, std::move(range)));
  unit->columns_ = std::move(columns);
  return unit;
}

std::unique_ptr<RangeUnit> RangeUnit::Part(plan::KeyRange range) const {
  std::unique_ptr<RangeUnit> part(new RangeUnit(plan_, mode_, std::move(range)));
  part->columns_ = columns_;
  part->schema_ = schema_;
  part->job_id_ = job_id_;
  part->attempts_ = attempts_;
  return part;
}

std::string RangeUnit::Describe() const {
  return "key range (" + range_.lo.value_or("start") + ", " + range_.hi.value_or("end") + "]";
}

Result<long> RangeUnit::Apply(pg::Connection& conn) {
  if (mode_ == Mode::kAppend) {
    const plan::Bound append = plan_.AppendRange(range_);
    auto appended = conn.QueryPrepared(append.text, append.params);
    if (!appended.ok()) return appended.status();
    return appended->affected;
  }
  const plan::Bound recompute = plan_.RecomputeRange(range_, columns_);
  auto applied = conn.QueryPrepared(recompute.text, recompute.params);
  if (!applied.ok()) return applied.status();
  return std::stol(applied->text(0, 0)) + std::stol(applied->text(0, 1));
}

Result<std::vector<std::unique_ptr<Unit>>> RangeUnit::Split(pg::Connection& conn) {
  const plan::Bound middle = plan_.MiddleKey(range_);
  auto found = conn.Query(middle.text, middle.params);
  if (!found.ok()) return found.status();
  std::vector<std::unique_ptr<Unit>> out;
  if (found->empty()) return out;  // one key (or none): cannot be cut
  out.push_back(Part(plan::KeyRange{range_.lo, found->at(0, 0)}));
  out.push_back(Part(plan::KeyRange{found->at(0, 0), range_.hi}));
  return out;
}

Status RangeUnit::Complete(pg::Connection& conn) {
  if (mode_ != Mode::kAppend) return Status::OK();  // the chunk's caller moves the cursor
  return conn.Exec(sql::WithSchema("DELETE FROM {schema}.jobs WHERE id = $1::bigint", schema_),
                   {job_id_});
}

Status RangeUnit::Defer(pg::Connection& conn, const std::vector<const Unit*>& failed,
                        const Status& error) {
  // A rebuild chunk is redone whole (in place, idempotent) once the charge's
  // backoff has passed: its cursor has not moved.
  if (mode_ != Mode::kAppend) return Status::OK();
  // A first build's range was appended except for the failing parts (a
  // target without a key cannot take a range twice): the job is replaced by
  // one job per failing part, each waiting with backoff.
  TRELLIS_RETURN_IF_ERROR(conn.Exec(
      sql::WithSchema("DELETE FROM {schema}.jobs WHERE id = $1::bigint", schema_), {job_id_}));
  for (const Unit* unit : failed) {
    const auto& part = static_cast<const RangeUnit&>(*unit);
    TRELLIS_RETURN_IF_ERROR(
        conn.Exec(sql::WithSchema(R"sql(
INSERT INTO {schema}.jobs (transform_id, kind, lo, hi, est_rows, attempts, last_error, retry_at)
VALUES ($1::int, 'build_range', $2::text[], $3::text[], 1, $4::int + 1, $5,
        now() + least(interval '60 seconds', interval '100 milliseconds' * power(2, $4::int))))sql",
                                  schema_),
                  {std::to_string(plan_.transform_id()), part.range_.lo, part.range_.hi,
                   std::to_string(attempts_), error.message()}));
  }
  return Status::OK();
}

}  // namespace trellis::drain
