#include "bench_db.h"

#include <chrono>

namespace trellis::bench {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::unique_ptr<pg::Connection> Connect(const std::string& url) {
  auto conn = pg::Connection::Open(url, "trellis bench");
  if (!conn.ok()) throw BenchError("connect: " + conn.status().ToString());
  return std::move(conn.value());
}

}  // namespace

BenchDb::BenchDb(const test::ThrowawayCluster& cluster, const std::string& name,
                 const std::string& capture_mode)
    : capture_mode_(capture_mode) {
  auto admin = Connect(cluster.url());
  Status created = admin->Exec("CREATE DATABASE " + name);
  if (!created.ok()) throw BenchError("CREATE DATABASE " + name + ": " + created.ToString());
  url_ = cluster.UrlFor(name);
  conn_ = Connect(url_);
  auto session = Session::Open(Options());
  if (!session.ok()) throw BenchError("session: " + session.status().ToString());
  session_ = std::move(session.value());
  Status migrated = session_->Migrate();
  if (!migrated.ok()) throw BenchError("migrate: " + migrated.ToString());
  auto mode = session_->EnsureCaptureMode();
  if (!mode.ok()) throw BenchError("capture mode: " + mode.status().ToString());
}

ConnectOptions BenchDb::Options() const {
  ConnectOptions o;
  o.url = url_;
  o.application_name = "trellis bench";
  o.capture_mode = capture_mode_;
  return o;
}

std::string BenchRows(long n) {
  return "SELECT g, g % 1000, md5(g::text) FROM generate_series(1, " + std::to_string(n) + ") g";
}

void BenchDb::CreateFilledTable(const std::string& table, long rows) {
  Sql("CREATE TABLE " + table + " " + kBenchColumns + "; INSERT INTO " + table + " " +
      BenchRows(rows));
  Sql("VACUUM ANALYZE " + table);
}

void BenchDb::Sql(const std::string& script) {
  Status st = conn_->ExecScript(script);
  if (!st.ok()) throw BenchError(script + "\n-> " + st.ToString());
}

std::string BenchDb::Scalar(const std::string& query) {
  auto rows = conn_->Query(query);
  if (!rows.ok()) throw BenchError(query + "\n-> " + rows.status().ToString());
  if (rows->size() != 1 || rows->columns.size() != 1) throw BenchError(query + ": not 1x1");
  return rows->text(0, 0);
}

double BenchDb::TimeSql(const std::string& statement) {
  const auto start = Clock::now();
  Sql(statement);
  return SecondsSince(start);
}

void BenchDb::Apply(const std::string& statement) {
  auto r = session_->Apply(statement, false);
  if (!r.ok()) throw BenchError(statement + "\n-> " + r.status().ToString());
}

double BenchDb::AwaitConverged(int timeout_ms) {
  auto seconds = TryAwaitConverged(timeout_ms);
  if (!seconds) throw BenchError("not converged within " + std::to_string(timeout_ms) + " ms");
  return *seconds;
}

std::optional<double> BenchDb::TryAwaitConverged(int timeout_ms) {
  const auto start = Clock::now();
  auto token = session_->WatermarkToken();
  if (!token.ok()) throw BenchError("watermark: " + token.status().ToString());
  auto done = session_->AwaitConverged(token.value(), std::chrono::milliseconds(timeout_ms));
  if (!done.ok()) throw BenchError("await_converged: " + done.status().ToString());
  if (!done.value()) return std::nullopt;
  return SecondsSince(start);
}

TransformStatus BenchDb::ReadStatus(const std::string& transform) {
  auto status = session_->ReadStatus(transform);
  if (!status.ok()) throw BenchError("status of " + transform + ": " + status.status().ToString());
  return status.value();
}

std::unique_ptr<BackgroundWorkers> BenchDb::StartWorkers() {
  return BackgroundWorkers::Start(Options(), /*staging=*/true, /*drain_threads=*/2);
}

}  // namespace trellis::bench
