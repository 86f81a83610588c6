#include "capture/capture_mode.h"
#include "capture/feed.h"
#include "catalog/composite.h"
#include "catalog/migrations.h"
#include "catalog/model.h"
#include "catalog/states.h"
#include "pg/connection.h"
#include "reads/convergence.h"
#include "reads/dump.h"
#include "reads/status.h"
#include "statements/apply.h"
#include "trellis/engine.h"

namespace trellis {

std::string RedactUrl(const std::string& url) { return pg::RedactConninfo(url); }

int64_t MigrationLockKey(const std::string& schema) { return catalog::MigrationLockKey(schema); }

Result<std::unique_ptr<Session>> Session::Open(const ConnectOptions& options) {
  if (options.schema.empty()) return Status::Validation("the catalog schema name is empty");
  auto conn = pg::Connection::Open(options.url, options.application_name);
  if (!conn.ok()) return conn.status();
  return std::unique_ptr<Session>(new Session(options, std::move(conn.value())));
}

Session::Session(ConnectOptions options, std::unique_ptr<pg::Connection> conn)
    : options_(std::move(options)), conn_(std::move(conn)) {
  instance_ = conn_->database() + "/" + options_.schema;
}

Session::~Session() = default;

void Session::RequestCancel() {
  cancelled_ = true;
  conn_->RequestCancel();
}

// Checked between calls (the pool does): a session the server closed while
// it sat idle counts as broken, though libpq has not noticed yet.
bool Session::broken() const { return !conn_->Usable(); }

bool Session::holds_grown_buffers() const { return conn_->buffers_grown(); }

Result<ServerInfo> Session::Info() {
  auto rows = conn_->Query("SELECT current_setting('server_version')");
  if (!rows.ok()) return rows.status();
  return ServerInfo{instance_, rows->text(0, 0), std::string(kEngineVersion)};
}

Status Session::Migrate() { return catalog::Migrate(*conn_, options_.schema); }

Status Session::CheckMigrated() { return catalog::CheckMigrated(*conn_, options_.schema); }

Result<ApplyResult> Session::Apply(std::string_view statement, bool define_only) {
  return statements::Apply(*conn_, options_.schema, statement, define_only);
}

Result<TransformStatus> Session::ReadStatus(const std::string& transform) {
  return reads::ReadStatus(*conn_, options_.schema, transform);
}

Result<std::vector<Definition>> Session::Definitions() {
  return reads::ReadDefinitions(*conn_, options_.schema);
}

Result<bool> Session::HasLiveDrainWorkers() {
  return reads::HasLiveWorkers(*conn_, options_.schema, "drain");
}

Result<bool> Session::HasLiveStagingWorker() {
  return reads::HasLiveWorkers(*conn_, options_.schema, "staging");
}

Result<std::string> Session::WatermarkToken() {
  return reads::WatermarkToken(*conn_, options_.schema);
}

Result<bool> Session::AwaitConverged(const std::string& token, std::chrono::milliseconds timeout) {
  return reads::AwaitConverged(*conn_, options_.schema, token, timeout, cancelled_);
}

Status Session::RequestBackfill(const std::string& transform) {
  auto tx = pg::Transaction::Begin(*conn_);
  if (!tx.ok()) return tx.status();
  TRELLIS_RETURN_IF_ERROR(CheckMigrated());
  auto t = reads::LoadNamedTransform(*conn_, options_.schema, transform, /*lock=*/true);
  if (!t.ok()) return t.status();
  // A transform of stages is rebuilt as one: its stages in order, then it.
  auto whole = catalog::LoadComposite(*conn_, options_.schema, std::move(t.value()),
                                      /*lock=*/true);
  if (!whole.ok()) return whole.status();
  for (const auto& stage : whole->stages) {
    TRELLIS_RETURN_IF_ERROR(
        catalog::RequestRebuild(*conn_, options_.schema, stage.id, std::nullopt));
  }
  TRELLIS_RETURN_IF_ERROR(
      catalog::RequestRebuild(*conn_, options_.schema, whole->owner.id, std::nullopt));
  return tx.value()->Commit();
}

Result<std::vector<std::string>> Session::DetectCaptureDisruptions() {
  auto tx = pg::Transaction::Begin(*conn_);
  if (!tx.ok()) return tx.status();
  TRELLIS_RETURN_IF_ERROR(CheckMigrated());
  auto found = capture::CatalogFeed(options_.schema)->PauseDisruptedReaders(*conn_);
  if (!found.ok()) return found.status();
  TRELLIS_RETURN_IF_ERROR(tx.value()->Commit());
  std::vector<std::string> tables;
  for (const auto& d : found.value()) tables.push_back(d.table);
  return tables;
}

Result<std::string> Session::EnsureCaptureMode() {
  TRELLIS_RETURN_IF_ERROR(CheckMigrated());
  return capture::EnsureCaptureMode(*conn_, options_.schema, options_.capture_mode);
}

Result<std::string> Session::DumpDefinitionsSql() {
  return reads::DumpDefinitionsSql(*conn_, options_.schema);
}

}  // namespace trellis
