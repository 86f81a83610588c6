#include "drain/self_check_jobs.h"

#include <cstdio>

#include "sql/quote.h"
#include "sql/row_reader.h"

namespace trellis::drain {
namespace {

// The job's columns every read returns, in this order.
constexpr std::string_view kJobColumns =
    "j.id, j.mode, j.sample_size, j.state, j.rows_compared, j.error, j.report IS NOT NULL";

std::string Json(std::string_view text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

std::string JsonOrNull(const std::optional<std::string>& text) {
  return text ? Json(*text) : "null";
}

std::string JsonArray(const std::vector<std::string>& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) out += (i ? "," : "") + items[i];
  return out + "]";
}

std::string ReportJson(const SelfCheckReport& report) {
  std::vector<std::string> divergences;
  for (const auto& d : report.divergences) {
    std::vector<std::string> key;
    for (const auto& k : d.key) key.push_back(JsonOrNull(k));
    std::vector<std::string> columns;
    for (const auto& c : d.columns) {
      columns.push_back("{\"name\":" + Json(c.name) + ",\"target\":" + JsonOrNull(c.target) +
                        ",\"recomputed\":" + JsonOrNull(c.recomputed) + "}");
    }
    divergences.push_back("{\"kind\":" + Json(d.kind) + ",\"key\":" + JsonArray(key) +
                          ",\"columns\":" + JsonArray(columns) + ",\"fix\":" + Json(d.fix) + "}");
  }
  std::vector<std::string> ranges;
  for (const auto& r : report.failed_ranges) ranges.push_back(Json(r));
  std::vector<std::string> quarantined;
  for (const auto& c : report.quarantined_columns) quarantined.push_back(Json(c));
  return "{\"outcome\":" + Json(report.outcome) +
         ",\"rows_compared\":" + std::to_string(report.rows_compared) +
         ",\"divergence_count\":" + std::to_string(report.divergence_count) +
         ",\"truncated\":" + (report.truncated ? "true" : "false") +
         ",\"unsettled_keys\":" + std::to_string(report.unsettled_keys) +
         ",\"failed_ranges\":" + JsonArray(ranges) +
         ",\"quarantined_columns\":" + JsonArray(quarantined) +
         ",\"divergences\":" + JsonArray(divergences) + "}";
}

Result<SelfCheckJob> JobFromRow(const pg::Rows& rows, size_t r, const std::string& target) {
  sql::RowReader row(rows, r);
  SelfCheckJob job;
  job.id = row.Int64(0);
  job.target = target;
  job.mode = row.Text(1);
  job.sample_size = row.OptionalInt64(2);
  job.state = row.Text(3);
  job.rows_compared = row.Int64(4);
  job.error = row.OptionalText(5);
  if (!row.status().ok()) return row.status();
  return job;
}

// The report of job `id`, decoded from its jsonb by the server.
Result<SelfCheckReport> ReadReport(pg::Connection& conn, const std::string& schema, int64_t id) {
  const std::string job_id = std::to_string(id);
  auto head = conn.Query(sql::WithSchema(R"sql(
SELECT report->>'outcome', report->>'rows_compared', report->>'divergence_count',
       report->>'truncated', report->>'unsettled_keys',
       ARRAY(SELECT jsonb_array_elements_text(report->'failed_ranges')),
       ARRAY(SELECT jsonb_array_elements_text(report->'quarantined_columns'))
FROM {schema}.self_check_jobs WHERE id = $1::bigint)sql",
                                         schema),
                         {job_id});
  if (!head.ok()) return head.status();
  if (head->empty()) return Status::NotFound("the self-check job is gone");
  SelfCheckReport report;
  sql::RowReader row(head.value(), 0);
  report.outcome = row.Text(0);
  report.rows_compared = row.OptionalInt64(1).value_or(0);
  report.divergence_count = row.OptionalInt64(2).value_or(0);
  report.truncated = row.Text(3) == "true";
  report.unsettled_keys = row.OptionalInt64(4).value_or(0);
  report.failed_ranges = row.TextArray(5);
  report.quarantined_columns = row.TextArray(6);
  if (!row.status().ok()) return row.status();

  auto divergences = conn.Query(sql::WithSchema(R"sql(
SELECT d.v->>'kind', d.v->>'fix', ARRAY(SELECT jsonb_array_elements_text(d.v->'key'))
FROM {schema}.self_check_jobs j,
     jsonb_array_elements(j.report->'divergences') WITH ORDINALITY AS d(v, n)
WHERE j.id = $1::bigint ORDER BY d.n)sql",
                                                schema),
                                {job_id});
  if (!divergences.ok()) return divergences.status();
  for (size_t r = 0; r < divergences->size(); ++r) {
    sql::RowReader d(divergences.value(), r);
    report.divergences.push_back(Divergence{d.Text(0), d.NullableTextArray(2), {}, d.Text(1)});
    if (!d.status().ok()) return d.status();
  }
  auto columns = conn.Query(sql::WithSchema(R"sql(
SELECT d.n, c.v->>'name', c.v->>'target', c.v->>'recomputed'
FROM {schema}.self_check_jobs j,
     jsonb_array_elements(j.report->'divergences') WITH ORDINALITY AS d(v, n),
     jsonb_array_elements(d.v->'columns') WITH ORDINALITY AS c(v, m)
WHERE j.id = $1::bigint ORDER BY d.n, c.m)sql",
                                            schema),
                            {job_id});
  if (!columns.ok()) return columns.status();
  for (size_t r = 0; r < columns->size(); ++r) {
    sql::RowReader c(columns.value(), r);
    const size_t n = static_cast<size_t>(c.Int64(0));
    if (!c.status().ok()) return c.status();
    if (n < 1 || n > report.divergences.size()) continue;
    report.divergences[n - 1].columns.push_back(
        DivergentColumn{columns->text(r, 1), columns->at(r, 2), columns->at(r, 3)});
  }
  auto failures = conn.Query(sql::WithSchema(R"sql(
SELECT f->>'unit_kind', f->>'failure_class', f->>'since_us', f->>'attempts', f->>'sqlstate',
       f->>'message', ARRAY(SELECT jsonb_array_elements_text(f->'parts'))
FROM {schema}.self_check_jobs j, jsonb_array_elements(j.report->'drain_failures') f
WHERE j.id = $1::bigint)sql",
                                             schema),
                             {job_id});
  if (!failures.ok()) return failures.status();
  for (size_t r = 0; r < failures->size(); ++r) {
    sql::RowReader f(failures.value(), r);
    report.drain_failures.push_back(DrainFailureStatus{
        f.Text(0), f.Text(1), f.OptionalInt64(2).value_or(0), f.OptionalInt64(3).value_or(0),
        f.OptionalText(4), f.Text(5), f.TextArray(6)});
    if (!f.status().ok()) return f.status();
  }
  return report;
}

}  // namespace

Result<SelfCheckJob> StartSelfCheckJob(pg::Connection& conn, const std::string& schema,
                                       int transform_id, const std::string& target,
                                       const SelfCheckRequest& request) {
  const std::optional<std::string> sample =
      request.sample_size ? std::optional<std::string>(std::to_string(*request.sample_size))
                          : std::nullopt;
  // One statement, so two callers racing on one target get one job: the
  // insert, or the replacement of a finished job under a new id, or (when
  // the job is unfinished) no row and the existing job is read back.
  auto started = conn.Query(sql::WithSchema(std::string(R"sql(
INSERT INTO {schema}.self_check_jobs AS j (transform_id, mode, sample_size)
VALUES ($1::int, $2, $3::bigint)
ON CONFLICT (transform_id) DO UPDATE
  SET id = nextval(pg_get_serial_sequence('{schema}.self_check_jobs', 'id')),
      mode = EXCLUDED.mode, sample_size = EXCLUDED.sample_size, state = 'queued',
      worker_id = NULL, rows_compared = 0, report = NULL, error = NULL, created_at = now(),
      started_at = NULL, finished_at = NULL
  WHERE j.state NOT IN ('queued', 'running')
RETURNING )sql") + std::string(kJobColumns),
                                            schema),
                            {std::to_string(transform_id), request.mode, sample});
  if (!started.ok()) return started.status();
  if (!started->empty()) return JobFromRow(*started, 0, target);
  auto existing = conn.Query(
      sql::WithSchema("SELECT " + std::string(kJobColumns) +
                          " FROM {schema}.self_check_jobs j WHERE transform_id = $1::int",
                      schema),
      {std::to_string(transform_id)});
  if (!existing.ok()) return existing.status();
  if (existing->empty()) return Status::Internal("the self-check job vanished as it was started");
  return JobFromRow(*existing, 0, target);
}

Result<std::optional<SelfCheckJob>> ReadSelfCheckJob(pg::Connection& conn,
                                                     const std::string& schema, int64_t id) {
  auto rows = conn.Query(sql::WithSchema("SELECT " + std::string(kJobColumns) +
                                             ", t.target_name FROM {schema}.self_check_jobs j "
                                             "JOIN {schema}.transforms t ON t.id = j.transform_id "
                                             "WHERE j.id = $1::bigint",
                                         schema),
                         {std::to_string(id)});
  if (!rows.ok()) return rows.status();
  if (rows->empty()) return std::optional<SelfCheckJob>();
  auto read = JobFromRow(*rows, 0, rows->text(0, 7));
  if (!read.ok()) return read.status();
  SelfCheckJob job = std::move(read.value());
  if (rows->text(0, 6) == "t") {
    auto report = ReadReport(conn, schema, id);
    if (!report.ok()) return report.status();
    job.report = std::move(report.value());
  }
  return std::optional<SelfCheckJob>(std::move(job));
}

Result<std::optional<ClaimedSelfCheck>> ClaimSelfCheckJob(pg::Connection& conn,
                                                          const std::string& schema,
                                                          const std::string& worker_id) {
  auto rows = conn.Query(sql::WithSchema(R"sql(
UPDATE {schema}.self_check_jobs j
SET state = 'running', worker_id = $1, rows_compared = 0, started_at = now()
WHERE j.id = (
  SELECT c.id FROM {schema}.self_check_jobs c
  WHERE c.state = 'queued'
     OR (c.state = 'running' AND NOT EXISTS (
           SELECT 1 FROM {schema}.workers w
           WHERE w.id = c.worker_id
             AND w.heartbeat_at > now() - make_interval(secs => $2::int)))
  ORDER BY c.id LIMIT 1 FOR UPDATE SKIP LOCKED)
RETURNING j.id, j.transform_id, j.mode, j.sample_size)sql",
                                         schema),
                         {worker_id, std::to_string(kSelfCheckLeaseSeconds)});
  if (!rows.ok()) return rows.status();
  if (rows->empty()) return std::optional<ClaimedSelfCheck>();
  sql::RowReader row(rows.value(), 0);
  ClaimedSelfCheck claimed{row.Int64(0), row.Int(1), row.Text(2), row.OptionalInt64(3).value_or(0)};
  if (!row.status().ok()) return row.status();
  return std::optional<ClaimedSelfCheck>(std::move(claimed));
}

Result<bool> AddSelfCheckProgress(pg::Connection& conn, const std::string& schema, int64_t id,
                                  const std::string& worker_id, int64_t rows) {
  auto updated = conn.Query(sql::WithSchema(R"sql(
UPDATE {schema}.self_check_jobs SET rows_compared = rows_compared + $3::bigint
WHERE id = $1::bigint AND worker_id = $2 AND state = 'running')sql",
                                            schema),
                            {std::to_string(id), worker_id, std::to_string(rows)});
  if (!updated.ok()) return updated.status();
  return updated->affected == 1;
}

Status FinishSelfCheckJob(pg::Connection& conn, const std::string& schema, int64_t id,
                          const std::string& worker_id, const SelfCheckReport& report) {
  // The transform's open drain failures join the report as the check ends.
  return conn.Exec(
      sql::WithSchema(R"sql(
UPDATE {schema}.self_check_jobs j
SET state = 'done', finished_at = now(), rows_compared = $4::bigint,
    report = $3::jsonb || jsonb_build_object('drain_failures', (
      SELECT coalesce(jsonb_agg(jsonb_build_object(
               'unit_kind', f.unit_kind, 'failure_class', f.failure_class,
               'since_us', (extract(epoch FROM f.since) * 1000000)::bigint,
               'attempts', f.attempts, 'sqlstate', f.sqlstate, 'message', f.message,
               'parts', to_jsonb(f.parts))), '[]'::jsonb)
      FROM {schema}.drain_failures f WHERE f.transform_id = j.transform_id))
WHERE j.id = $1::bigint AND j.worker_id = $2 AND j.state = 'running')sql",
                      schema),
      {std::to_string(id), worker_id, ReportJson(report), std::to_string(report.rows_compared)});
}

Status FailSelfCheckJob(pg::Connection& conn, const std::string& schema, int64_t id,
                        const std::string& worker_id, const std::string& error) {
  return conn.Exec(sql::WithSchema(R"sql(
UPDATE {schema}.self_check_jobs SET state = 'failed', finished_at = now(), error = $3
WHERE id = $1::bigint AND worker_id = $2 AND state = 'running')sql",
                                   schema),
                   {std::to_string(id), worker_id, error});
}

}  // namespace trellis::drain
