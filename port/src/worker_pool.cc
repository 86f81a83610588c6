#include "worker_pool.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>

#include "memory.h"
#include "telemetry/series.h"

namespace trellis::port {

using std::chrono::steady_clock;

namespace {

// After a session fails to open while others are open, the pool waits this
// long before it tries to grow again, doubling up to the maximum; a success
// resets it. Without it, with the role's connection slots full, every call
// that finds the sessions busy would cost a failed connection attempt.
constexpr std::chrono::milliseconds kFirstGrowBackoff{1000};
constexpr std::chrono::milliseconds kMaxGrowBackoff{30000};

}  // namespace

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
  int sessions = 0;                         // workers holding a session; guarded by mu
  bool stopped = false;                     // guarded by mu
  // No worker is added before this while another worker exists; guarded by mu.
  steady_clock::time_point grow_after;
  std::chrono::milliseconds grow_backoff = kFirstGrowBackoff;  // guarded by mu
  int failed_opens = 0;  // since the last session opened; guarded by mu
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
    // queue outnumbers the idle workers, and, after a session failed to
    // open, not before the backoff (unless there is no worker at all).
    if (shared_->queue.size() > static_cast<size_t>(shared_->idle) &&
        shared_->workers < shared_->size &&
        (shared_->workers == 0 || steady_clock::now() >= shared_->grow_after)) {
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

int WorkerPool::open_sessions() const {
  std::lock_guard lock(shared_->mu);
  return shared_->sessions;
}

// Gives the worker a session for `call`, which it has taken from the queue.
// On failure, when other workers hold sessions, the call goes back to the
// head of the queue for them and this worker ends (kLeave): a thread without
// a session must not take calls. When no worker holds one, the call fails
// with the reason (kFailed), so callers hear that the database is out of
// reach instead of waiting for their deadline.
WorkerPool::SessionOutcome WorkerPool::EnsureSession(Shared& shared,
                                                     std::unique_ptr<Session>& session,
                                                     const std::shared_ptr<Call>& call) {
  telemetry::Gauge& open_sessions = telemetry::kPoolOpen.Get();
  if (session && session->broken()) {
    // Also a session the server closed while it sat idle (a restart): its
    // first statement would fail although it never reached the server.
    spdlog::info("discarding a database session the server closed or that broke");
    session.reset();
    open_sessions.Add(-1);
    std::lock_guard lock(shared.mu);
    --shared.sessions;
  }
  if (session) return SessionOutcome::kReady;

  auto opened = Session::Open(shared.options);
  std::unique_lock lock(shared.mu);
  if (opened.ok()) {
    session = std::move(opened.value());
    open_sessions.Add(1);
    ++shared.sessions;
    if (shared.failed_opens > 0) {
      spdlog::info("the pool opens sessions again ({} attempts had failed)", shared.failed_opens);
    }
    shared.failed_opens = 0;
    shared.grow_backoff = kFirstGrowBackoff;
    shared.grow_after = steady_clock::now();
    return SessionOutcome::kReady;
  }
  // One line when opening starts failing, one when it works again (above):
  // each failed call carries the reason to its caller anyway.
  if (shared.failed_opens++ == 0) {
    spdlog::warn("the pool cannot open a database session ({} open, pool_size {}): {}",
                 shared.sessions, shared.size, opened.status().message());
  }
  shared.grow_after = steady_clock::now() + shared.grow_backoff;
  shared.grow_backoff = std::min(shared.grow_backoff * 2, kMaxGrowBackoff);
  if (shared.sessions > 0 && !shared.stopped) {
    shared.queue.push_front(call);
    --shared.workers;
    lock.unlock();
    shared.wake.notify_one();
    return SessionOutcome::kLeave;
  }
  lock.unlock();
  shared.done(call, opened.status());
  return SessionOutcome::kFailed;
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

    switch (EnsureSession(*shared, session, call)) {
      case SessionOutcome::kReady:
        break;
      case SessionOutcome::kFailed:
        continue;
      case SessionOutcome::kLeave:
        return;  // EnsureSession counted this worker out
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
    // libpq never shrinks the buffers a large statement or row grew, so such
    // a session is closed now, not kept idle; the next call opens a new one.
    if (session->holds_grown_buffers()) {
      spdlog::debug("closing a database session whose buffers a large call grew");
      session.reset();
      open_sessions.Add(-1);
      std::lock_guard lock(shared->mu);
      --shared->sessions;
    }
    bool pool_idle = false;
    {
      std::lock_guard lock(shared->mu);
      pool_idle = shared->queue.empty() && shared->idle + 1 == shared->workers;
    }
    // The end of a burst: what its calls freed goes back to the OS.
    if (pool_idle) ReleaseFreedMemory();
  }
  std::lock_guard lock(shared->mu);
  if (session) {
    open_sessions.Add(-1);
    --shared->sessions;
  }
  --shared->workers;
}

}  // namespace trellis::port
