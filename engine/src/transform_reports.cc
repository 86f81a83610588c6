#include "trellis/transform_reports.h"

#include "pg/connection.h"
#include "reads/transform_reports.h"

namespace trellis {

TransformReports& TransformReports::Get() {
  static TransformReports reports;
  return reports;
}

void TransformReports::Publish(std::vector<TransformReport> reports, double read_at_unix_s) {
  std::lock_guard<std::mutex> lock(mu_);
  reports_ = std::move(reports);
  read_at_ = read_at_unix_s;
}

void TransformReports::Clear() {
  std::lock_guard<std::mutex> lock(mu_);
  reports_.clear();
  read_at_.reset();
}

std::vector<TransformReport> TransformReports::Snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  return reports_;
}

std::optional<double> TransformReports::read_at() const {
  std::lock_guard<std::mutex> lock(mu_);
  return read_at_;
}

Result<std::vector<TransformReport>> ReadTransformReportsNow(const ConnectOptions& options) {
  auto conn = pg::Connection::Open(options.url, options.application_name);
  if (!conn.ok()) return conn.status();
  return reads::ReadTransformReports(*conn.value(), options.schema);
}

}  // namespace trellis
