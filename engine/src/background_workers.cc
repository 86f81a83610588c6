#include "drain/drain_worker.h"
#include "staging/staging_worker.h"
#include "trellis/workers.h"

namespace trellis {

std::unique_ptr<BackgroundWorkers> BackgroundWorkers::Start(const ConnectOptions& options,
                                                            bool staging, int drain_threads) {
  std::unique_ptr<BackgroundWorkers> out(new BackgroundWorkers());
  if (staging) out->workers_.push_back(std::make_unique<staging::StagingWorker>(options));
  for (int i = 0; i < drain_threads; ++i) {
    out->workers_.push_back(std::make_unique<drain::DrainWorker>(options));
  }
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
