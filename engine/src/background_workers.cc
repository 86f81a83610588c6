#include "drain/drain_worker.h"
#include "reads/transform_reports.h"
#include "staging/stage_batch.h"
#include "staging/staging_worker.h"
#include "trellis/transform_reports.h"
#include "trellis/workers.h"
#include "workers/wake_listener.h"

namespace trellis {
namespace {
// How often the elected staging worker reads the transform reports: a few
// times per Prometheus scrape interval (15 s by default), at the cost of one
// status read per transform.
constexpr auto kReportEvery = std::chrono::seconds(5);
}  // namespace

std::unique_ptr<BackgroundWorkers> BackgroundWorkers::Start(const ConnectOptions& options,
                                                            bool staging, int drain_threads) {
  std::unique_ptr<BackgroundWorkers> out(new BackgroundWorkers());
  if (staging) {
    staging::StagingChore reports{kReportEvery, reads::PublishTransformReports,
                                  [] { TransformReports::Get().Clear(); }};
    out->workers_.push_back(std::make_unique<staging::StagingWorker>(options, std::move(reports)));
  }
  // A drain whose target another transform reads stages its own writes for
  // that reader in its transaction, in pages as the staging worker cuts them.
  const drain::StageOwnWritesFn stage_own_writes =
      [](pg::Connection& conn, const std::string& schema, const catalog::Transform& drained) {
        return staging::StageOwnWrites(conn, schema, drained, staging::StagingWorker::kPageKeys);
      };
  for (int i = 0; i < drain_threads; ++i) {
    out->workers_.push_back(std::make_unique<drain::DrainWorker>(options, stage_own_writes));
  }
  // Woken across ports by the roles this handle runs (a standby staging
  // worker too: nudging it costs one failed election try).
  std::vector<std::string> roles;
  if (staging) roles.push_back("staging");
  if (drain_threads > 0) roles.push_back("drain");
  if (!roles.empty())
    out->workers_.push_back(std::make_unique<workers::WakeListener>(options, roles));
  for (auto& w : out->workers_) w->Start();
  return out;
}

BackgroundWorkers::~BackgroundWorkers() { Stop(); }

void BackgroundWorkers::RequestStop() {
  for (auto& w : workers_) w->RequestStop();
}

void BackgroundWorkers::Stop() {
  for (auto& w : workers_) w->Stop();
}

}  // namespace trellis
