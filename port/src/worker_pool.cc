#include "worker_pool.h"

#include <spdlog/spdlog.h>

#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>

#include "telemetry/series.h"

namespace trellis::port {

struct WorkerPool::Shared {
  Shared(ConnectOptions options, int size, Done done)
      : options(std::move(options)), size(size), done(std::move(done)) {}

  const ConnectOptions options;
  const int size;
  const Done done;

  std::mutex mu;
  std::condition_variable wake;
  std::deque<std::shared_ptr<Call>> queue;  // guarded by mu
  int workers = 0;                          // guarded by mu
  int idle = 0;                             // workers waiting for a call; guarded by mu
  bool stopped = false;                     // guarded by mu
};

WorkerPool::WorkerPool(ConnectOptions options, int size, Done done)
    : size_(size), shared_(std::make_shared<Shared>(std::move(options), size, std::move(done))) {}

WorkerPool::~WorkerPool() { Stop(); }

void WorkerPool::Submit(std::shared_ptr<Call> call) {
  bool start_worker = false;
  {
    std::lock_guard lock(shared_->mu);
    if (shared_->stopped) return;
    shared_->queue.push_back(std::move(call));
    // A woken idle worker takes one call, so start one more only when the
    // queue outnumbers the idle workers.
    if (shared_->queue.size() > static_cast<size_t>(shared_->idle) &&
        shared_->workers < shared_->size) {
      ++shared_->workers;
      start_worker = true;
    }
  }
  if (start_worker) {
    std::thread(WorkerLoop, shared_).detach();
  } else {
    shared_->wake.notify_one();
  }
}

bool WorkerPool::Remove(const std::shared_ptr<Call>& call) {
  std::lock_guard lock(shared_->mu);
  for (auto it = shared_->queue.begin(); it != shared_->queue.end(); ++it) {
    if (*it == call) {
      shared_->queue.erase(it);
      return true;
    }
  }
  return false;
}

void WorkerPool::Stop() {
  {
    std::lock_guard lock(shared_->mu);
    shared_->stopped = true;
    shared_->queue.clear();
  }
  shared_->wake.notify_all();
}

void WorkerPool::WorkerLoop(std::shared_ptr<Shared> shared) {
  telemetry::Gauge& open_sessions = telemetry::kPoolOpen.Get();
  telemetry::Gauge& busy_sessions = telemetry::kPoolInUse.Get();
  std::unique_ptr<Session> session;
  for (;;) {
    std::shared_ptr<Call> call;
    {
      std::unique_lock lock(shared->mu);
      ++shared->idle;
      shared->wake.wait(lock, [&] { return shared->stopped || !shared->queue.empty(); });
      --shared->idle;
      if (shared->stopped) break;
      call = std::move(shared->queue.front());
      shared->queue.pop_front();
    }
    if (call->cancel_requested) continue;

    if (session && session->broken()) {
      spdlog::info("discarding a broken database session");
      session.reset();
      open_sessions.Add(-1);
    }
    if (!session) {
      auto opened = Session::Open(shared->options);
      if (!opened.ok()) {
        shared->done(call, opened.status());
        continue;
      }
      session = std::move(opened.value());
      open_sessions.Add(1);
    }

    // A cancel meant for the session's previous call must not stop this one;
    // from here on, the Canceller can reach this call's statements.
    session->ResetCancel();
    {
      std::lock_guard lock(call->mu);
      if (call->cancel_requested) continue;
      call->session = session.get();
    }
    Result<protocol::Value> result = Status::Internal("the op returned no result");
    busy_sessions.Add(1);
    try {
      result = call->op.run_database(*session, call->args);
    } catch (const std::exception& e) {
      result = Status::Internal("op \"" + call->op.name + "\" threw: " + e.what());
    } catch (...) {
      result = Status::Internal("op \"" + call->op.name + "\" threw a non-standard exception");
    }
    busy_sessions.Add(-1);
    {
      std::lock_guard lock(call->mu);
      call->session = nullptr;
    }
    shared->done(call, std::move(result));
  }
  if (session) open_sessions.Add(-1);
  std::lock_guard lock(shared->mu);
  --shared->workers;
}

}  // namespace trellis::port
