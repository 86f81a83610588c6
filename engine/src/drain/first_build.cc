#include "drain/first_build.h"

#include <algorithm>
#include <cmath>

#include "drain/range_unit.h"
#include "plan/bind.h"
#include "sql/quote.h"

namespace trellis::drain {
namespace {

// Enough sampled rows per range for even ranges, and at least this many in
// all, so that the pages sampled are spread over the whole table.
constexpr double kSampleRowsPerRange = 100;
constexpr double kMinSampleRows = 10000;

}  // namespace

Status PlanFirstBuild(pg::Connection& conn, const std::string& schema, const catalog::Transform& t,
                      long estimated_rows, long range_rows) {
  const long ranges = std::max(1L, (estimated_rows + range_rows - 1) / range_rows);
  std::vector<std::optional<std::string>> boundaries;
  if (ranges > 1) {
    const double wanted = std::max(kMinSampleRows, kSampleRowsPerRange * ranges);
    const double percent = std::min(100.0, 100.0 * wanted / static_cast<double>(estimated_rows));
    const double expected = percent / 100.0 * static_cast<double>(estimated_rows);
    const long per_boundary = std::max(1L, std::lround(expected / static_cast<double>(ranges)));
    auto plan = plan::Bind(t, schema);
    if (!plan.ok()) return plan.status();
    const plan::Bound sample = plan.value()->SampleBoundaries(percent, per_boundary, ranges - 1);
    auto sampled = conn.Query(sample.text, sample.params);
    if (!sampled.ok()) return sampled.status();
    for (size_t r = 0; r < sampled->size(); ++r) boundaries.push_back(sampled->at(r, 0));
  }
  // Ranges (NULL, b1], (b1, b2], ..., (bn, NULL): every key is in exactly one.
  std::vector<std::optional<std::string>> lows{std::nullopt};
  for (const auto& b : boundaries) lows.push_back(b);
  std::vector<std::optional<std::string>> highs = boundaries;
  highs.push_back(std::nullopt);
  const long per_range = estimated_rows / static_cast<long>(lows.size());
  for (size_t i = 0; i < lows.size(); ++i) {
    TRELLIS_RETURN_IF_ERROR(conn.Exec(
        sql::WithSchema("INSERT INTO {schema}.jobs (transform_id, kind, lo, hi, est_rows) "
                        "VALUES ($1::int, 'build_range', $2::text[], $3::text[], $4::bigint)",
                        schema),
        {std::to_string(t.id), lows[i], highs[i],
         std::to_string(i + 1 == lows.size()
                            ? estimated_rows - per_range * static_cast<long>(lows.size() - 1)
                            : per_range)}));
  }
  return Status::OK();
}

Result<std::optional<long>> AppendOneRange(pg::Connection& conn, const std::string& schema,
                                           UnitExecutor& executor) {
  // Every idle poll of every drain worker comes here, and almost always no
  // first build is running: answer that in one round trip, not a transaction.
  auto any = conn.Query(sql::WithSchema(
      "SELECT EXISTS (SELECT 1 FROM {schema}.jobs WHERE kind = 'build_range')", schema));
  if (!any.ok()) return any.status();
  if (any->text(0, 0) != "t") return std::optional<long>();
  auto tx = pg::Transaction::Begin(conn);
  if (!tx.ok()) return tx.status();
  // The transform's row first, shared: appends of one build run side by side,
  // while a rebuild, a pause or the build's last step (which lock the row for
  // update) wait until every running append has committed. Always this order,
  // row then range, so no two of them can deadlock. A range waiting for a
  // retry after a failure is skipped, so it holds up no other build.
  auto picked = conn.Query(sql::WithSchema(R"sql(
SELECT t.id FROM {schema}.transforms t
WHERE t.status = 'backfilling' AND NOT t.key_indexed
  AND EXISTS (SELECT 1 FROM {schema}.jobs r
              WHERE r.transform_id = t.id AND r.kind = 'build_range'
                AND (r.retry_at IS NULL OR r.retry_at <= now()))
ORDER BY t.id LIMIT 1
FOR SHARE OF t SKIP LOCKED)sql",
                                           schema));
  if (!picked.ok()) return picked.status();
  if (picked->empty()) {
    TRELLIS_RETURN_IF_ERROR(tx.value()->Commit());
    return std::optional<long>();
  }
  const std::string id = picked->text(0, 0);
  auto range = conn.Query(sql::WithSchema(R"sql(
SELECT id, lo, hi, attempts FROM {schema}.jobs
WHERE transform_id = $1::int AND kind = 'build_range' AND (retry_at IS NULL OR retry_at <= now())
ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)sql",
                                          schema),
                          {id});
  if (!range.ok()) return range.status();
  if (range->empty()) {
    TRELLIS_RETURN_IF_ERROR(tx.value()->Commit());
    return std::optional<long>();
  }
  auto t = catalog::LoadTransformById(conn, schema, std::stoi(id));
  if (!t.ok()) return t.status();
  auto plan = plan::Bind(t.value(), schema);
  if (!plan.ok()) return plan.status();
  // A key range of a table loaded in key order reads fastest as an ordered
  // index scan; the bitmap scan the planner picks for a fifth of a table
  // builds its bitmap first, and cost an append ~15% more.
  TRELLIS_RETURN_IF_ERROR(conn.Exec("SET LOCAL enable_bitmapscan = off"));
  const int attempts = std::stoi(range->text(0, 3));
  auto unit = RangeUnit::BuildRange(*plan.value(), schema, range->text(0, 0), attempts,
                                    plan::KeyRange{range->at(0, 1), range->at(0, 2)});
  // Pausing updates the transform's row, which other appends hold shared and
  // may be about to update too: it happens in a transaction of its own.
  auto ran = executor.Run(conn, schema, t.value(), *unit,
                          RunOptions{.retrying = attempts > 0, .pause_alone = true});
  if (!ran.ok()) return ran.status();
  if (ran->outcome == UnitOutcome::kPauseAlone) {
    tx.value().reset();
    TRELLIS_RETURN_IF_ERROR(executor.PauseAlone(conn, schema, t.value(), ran->error));
    return std::optional<long>(0);  // the range stays for after RESUME
  }
  TRELLIS_RETURN_IF_ERROR(tx.value()->Commit());
  return std::optional<long>(ran->rows);
}

}  // namespace trellis::drain
