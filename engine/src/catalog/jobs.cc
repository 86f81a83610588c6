#include "catalog/jobs.h"

#include <array>

#include "sql/quote.h"
#include "sql/row_reader.h"

namespace trellis::catalog {
namespace {

constexpr std::array<std::string_view, 3> kJobKinds = {"build_range", "rebuild", "column_rebuild"};

std::string Id(int id) { return std::to_string(id); }

std::optional<std::string> OptionalArray(const std::optional<std::vector<std::string>>& values) {
  if (!values) return std::nullopt;
  return sql::ArrayLiteral(*values);
}

}  // namespace

std::string_view JobKindName(JobKind kind) { return kJobKinds[static_cast<size_t>(kind)]; }

std::optional<JobKind> JobKindFromName(std::string_view name) {
  for (size_t i = 0; i < kJobKinds.size(); ++i) {
    if (kJobKinds[i] == name) return static_cast<JobKind>(i);
  }
  return std::nullopt;
}

std::string BuildJobKindsSql() {
  std::vector<std::string> names;
  for (auto name : kJobKinds) names.push_back(sql::Literal(name));
  return "(" + sql::Join(names, ", ") + ")";
}

Status RequestRebuildJob(pg::Connection& conn, const std::string& schema, int id,
                         const std::optional<std::vector<std::string>>& columns) {
  // A whole-row rebuild (NULL columns) absorbs any column rebuild; column
  // rebuilds merge. The one pending job covers every key: PlanRanges cuts it
  // when the build starts.
  return conn.Exec(sql::WithSchema(R"sql(
WITH previous AS (
  DELETE FROM {schema}.jobs
  WHERE transform_id = $1::int AND kind IN ('rebuild', 'column_rebuild')
  RETURNING kind, columns
), merged AS (
  SELECT CASE
    WHEN $2::text[] IS NULL OR EXISTS (SELECT 1 FROM previous WHERE kind = 'rebuild') THEN NULL
    ELSE ARRAY(SELECT DISTINCT c FROM (SELECT unnest(columns) FROM previous
                                       UNION ALL SELECT unnest($2::text[])) AS u(c) ORDER BY c)
  END AS columns
)
INSERT INTO {schema}.jobs (transform_id, kind, columns)
SELECT $1::int, CASE WHEN columns IS NULL THEN 'rebuild' ELSE 'column_rebuild' END, columns
FROM merged)sql",
                                   schema),
                   {Id(id), OptionalArray(columns)});
}

Status DropBuildJobs(pg::Connection& conn, const std::string& schema, int id) {
  return conn.Exec(sql::WithSchema("DELETE FROM {schema}.jobs WHERE transform_id = $1::int AND "
                                   "kind IN " +
                                       BuildJobKindsSql(),
                                   schema),
                   {Id(id)});
}

Result<PendingBuild> PendingBuildOf(pg::Connection& conn, const std::string& schema, int id,
                                    bool key_indexed) {
  if (!key_indexed) return PendingBuild{JobKind::kBuildRange, std::nullopt};
  auto pending = conn.Query(sql::WithSchema(R"sql(
SELECT kind, columns FROM {schema}.jobs
WHERE transform_id = $1::int AND kind IN ('rebuild', 'column_rebuild')
ORDER BY kind = 'rebuild' DESC, id LIMIT 1)sql",
                                            schema),
                            {Id(id)});
  if (!pending.ok()) return pending.status();
  if (pending->empty()) return PendingBuild{JobKind::kRebuild, std::nullopt};
  sql::RowReader row(pending.value(), 0);
  const auto kind = JobKindFromName(row.Text(0));
  PendingBuild build{kind.value_or(JobKind::kRebuild), row.OptionalTextArray(1)};
  if (!row.status().ok()) return row.status();
  if (build.kind != JobKind::kColumnRebuild) build.columns.reset();
  return build;
}

Status PlanRanges(pg::Connection& conn, const std::string& schema, int id,
                  const PendingBuild& build,
                  const std::vector<std::optional<std::string>>& boundaries, long estimated_rows) {
  TRELLIS_RETURN_IF_ERROR(DropBuildJobs(conn, schema, id));
  // Ranges (NULL, b1], (b1, b2], ..., (bn, NULL]: every key is in exactly one.
  std::vector<std::optional<std::string>> lows{std::nullopt};
  for (const auto& b : boundaries) lows.push_back(b);
  std::vector<std::optional<std::string>> highs = boundaries;
  highs.push_back(std::nullopt);
  const long ranges = static_cast<long>(lows.size());
  const long per_range = estimated_rows / ranges;
  for (long i = 0; i < ranges; ++i) {
    const long estimate = i + 1 == ranges ? estimated_rows - per_range * (ranges - 1) : per_range;
    TRELLIS_RETURN_IF_ERROR(conn.Exec(
        sql::WithSchema("INSERT INTO {schema}.jobs (transform_id, kind, lo, hi, est_rows, columns) "
                        "VALUES ($1::int, $2, $3::text[], $4::text[], $5::bigint, $6::text[])",
                        schema),
        {Id(id), std::string(JobKindName(build.kind)), lows[static_cast<size_t>(i)],
         highs[static_cast<size_t>(i)], std::to_string(estimate), OptionalArray(build.columns)}));
  }
  return Status::OK();
}

Status FinishJob(pg::Connection& conn, const std::string& schema, const RangeJob& job) {
  return conn.Exec(sql::WithSchema("DELETE FROM {schema}.jobs WHERE id = $1::bigint", schema),
                   {job.id});
}

Status DeferJob(
    pg::Connection& conn, const std::string& schema, int id, const RangeJob& job,
    const std::vector<std::pair<std::optional<std::string>, std::optional<std::string>>>& failed,
    const std::string& error) {
  TRELLIS_RETURN_IF_ERROR(FinishJob(conn, schema, job));
  for (const auto& [lo, hi] : failed) {
    TRELLIS_RETURN_IF_ERROR(
        conn.Exec(sql::WithSchema(R"sql(
INSERT INTO {schema}.jobs
  (transform_id, kind, lo, hi, est_rows, columns, attempts, last_error, retry_at)
VALUES ($1::int, $2, $3::text[], $4::text[], 1, $5::text[], $6::int + 1, $7,
        now() + least(interval '60 seconds', interval '100 milliseconds' * power(2, $6::int))))sql",
                                  schema),
                  {Id(id), std::string(JobKindName(job.kind)), lo, hi, OptionalArray(job.columns),
                   std::to_string(job.attempts), error}));
  }
  return Status::OK();
}

Result<bool> HasBuildJobs(pg::Connection& conn, const std::string& schema, int id) {
  auto left = conn.Query(sql::WithSchema("SELECT 1 FROM {schema}.jobs WHERE transform_id = "
                                         "$1::int AND kind IN " +
                                             BuildJobKindsSql() + " LIMIT 1",
                                         schema),
                         {Id(id)});
  if (!left.ok()) return left.status();
  return !left->empty();
}

}  // namespace trellis::catalog
