#include "drain/first_build.h"

#include <algorithm>
#include <cmath>

#include "drain/recompute.h"
#include "drain/schema_change.h"
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
    auto sampled = conn.Query(
        SampleBoundariesSql(t),
        {std::to_string(percent), std::to_string(per_boundary), std::to_string(ranges - 1)});
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
        sql::WithSchema("INSERT INTO {schema}.build_ranges (transform_id, ord, lo, hi, est_rows) "
                        "VALUES ($1::int, $2::int, $3::text[], $4::text[], $5::bigint)",
                        schema),
        {std::to_string(t.id), std::to_string(i), lows[i], highs[i],
         std::to_string(i + 1 == lows.size()
                            ? estimated_rows - per_range * static_cast<long>(lows.size() - 1)
                            : per_range)}));
  }
  return Status::OK();
}

Result<std::optional<long>> AppendOneRange(pg::Connection& conn, const std::string& schema) {
  // Every idle poll of every drain worker comes here, and almost always no
  // first build is running: answer that in one round trip, not a transaction.
  auto any =
      conn.Query(sql::WithSchema("SELECT EXISTS (SELECT 1 FROM {schema}.build_ranges)", schema));
  if (!any.ok()) return any.status();
  if (any->text(0, 0) != "t") return std::optional<long>();
  auto tx = pg::Transaction::Begin(conn);
  if (!tx.ok()) return tx.status();
  // The transform's row first, shared: appends of one build run side by side,
  // while a rebuild, a pause or the build's last step (which lock the row for
  // update) wait until every running append has committed. Always this order,
  // row then range, so no two of them can deadlock.
  auto picked = conn.Query(sql::WithSchema(R"sql(
SELECT t.id FROM {schema}.transforms t
WHERE t.status = 'backfilling' AND NOT t.key_indexed
  AND EXISTS (SELECT 1 FROM {schema}.build_ranges r WHERE r.transform_id = t.id)
ORDER BY t.id LIMIT 1
FOR SHARE OF t SKIP LOCKED)sql",
                                           schema));
  if (!picked.ok()) return picked.status();
  if (!picked->empty()) {
    const std::string id = picked->text(0, 0);
    auto range = conn.Query(sql::WithSchema(R"sql(
SELECT ord, lo, hi FROM {schema}.build_ranges WHERE transform_id = $1::int
ORDER BY ord LIMIT 1 FOR UPDATE SKIP LOCKED)sql",
                                            schema),
                            {id});
    if (!range.ok()) return range.status();
    if (!range->empty()) {
      auto t = catalog::LoadTransformById(conn, schema, std::stoi(id));
      if (!t.ok()) return t.status();
      // A key range of a table loaded in key order reads fastest as an
      // ordered index scan; the bitmap scan the planner picks for a fifth of
      // a table builds its bitmap first, and cost an append ~15% more.
      TRELLIS_RETURN_IF_ERROR(conn.Exec("SET LOCAL enable_bitmapscan = off"));
      auto appended = conn.Query(AppendRangeSql(t.value()), {range->at(0, 1), range->at(0, 2)});
      if (!appended.ok()) {
        if (!IsSchemaChange(appended.status())) return appended.status();
        // Pause in a transaction of its own, after rolling this one back:
        // the pause updates the transform's row, which other appends hold
        // shared, and they may be about to do the same.
        tx.value().reset();
        auto pause = pg::Transaction::Begin(conn);
        if (!pause.ok()) return pause.status();
        TRELLIS_RETURN_IF_ERROR(PauseForSchemaChange(conn, schema, t.value(), appended.status()));
        TRELLIS_RETURN_IF_ERROR(pause.value()->Commit());
        return std::optional<long>(0);  // the range stays for after RESUME
      }
      TRELLIS_RETURN_IF_ERROR(conn.Exec(
          sql::WithSchema(
              "DELETE FROM {schema}.build_ranges WHERE transform_id = $1::int AND ord = $2::int",
              schema),
          {id, range->text(0, 0)}));
      TRELLIS_RETURN_IF_ERROR(tx.value()->Commit());
      return std::optional<long>(appended->affected);
    }
  }
  TRELLIS_RETURN_IF_ERROR(tx.value()->Commit());
  return std::optional<long>();
}

}  // namespace trellis::drain
