#include "workers/worker_loop.h"

#include <unistd.h>

#include <set>

#include "catalog/migrations.h"
#include "log/component_log.h"
#include "log/recurring_warning.h"
#include "sql/quote.h"
#include "trellis/engine_metrics.h"

namespace trellis::workers {
namespace {

constexpr auto kIdleSleep = std::chrono::milliseconds(10);
constexpr auto kHeartbeatEvery = std::chrono::seconds(1);

std::string HostName() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

// The gauge counting this role's running worker threads.
std::atomic<int64_t>& RunningWorkers(const std::string& role) {
  auto& metrics = GlobalEngineMetrics();
  return role == "staging" ? metrics.staging_workers : metrics.drain_workers;
}

// A step that throws (a bug, or memory exhausted) must end neither the
// thread nor, through std::terminate, the port: it becomes a failed step,
// which drops the connection and reconnects after a backoff.
template <typename Step>
Result<bool> Guarded(Step&& step) {
  try {
    return step();
  } catch (const std::exception& e) {
    return Status::Internal(std::string("unexpected failure: ") + e.what());
  } catch (...) {
    return Status::Internal("unexpected failure");
  }
}

// The running loops of this process, for NudgeRole.
std::mutex& LoopsMutex() {
  static std::mutex mu;
  return mu;
}
std::set<WorkerLoop*>& Loops() {
  static std::set<WorkerLoop*> loops;
  return loops;
}

}  // namespace

std::string MakeWorkerId(const std::string& role) {
  static std::atomic<int> counter{0};
  return HostName() + ":" + std::to_string(getpid()) + ":" + role + ":" +
         std::to_string(counter.fetch_add(1));
}

WorkerLoop::WorkerLoop(ConnectOptions options, std::string role, std::string id)
    : options_(std::move(options)), role_(std::move(role)), id_(std::move(id)) {}

WorkerLoop::~WorkerLoop() { Stop(); }

void WorkerLoop::Start() {
  {
    std::lock_guard lock(LoopsMutex());
    Loops().insert(this);
  }
  thread_ = std::thread([this] { Run(); });
}

void WorkerLoop::NudgeRole(const std::string& role) {
  std::lock_guard lock(LoopsMutex());
  for (WorkerLoop* loop : Loops()) {
    if (loop->role_ != role) continue;
    {
      std::lock_guard inner(loop->mu_);
      loop->nudged_ = true;
    }
    loop->wake_.notify_all();
  }
}

void WorkerLoop::RequestStop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    if (current_) current_->RequestCancel();
  }
  wake_.notify_all();
}

void WorkerLoop::Stop() {
  RequestStop();
  if (thread_.joinable()) thread_.join();
  std::lock_guard lock(LoopsMutex());
  Loops().erase(this);
}

void WorkerLoop::SleepFor(std::chrono::milliseconds d) {
  std::unique_lock lock(mu_);
  wake_.wait_for(lock, d, [this] { return stopping_.load() || nudged_; });
  nudged_ = false;
}

Status WorkerLoop::Heartbeat(pg::Connection& conn) {
  return conn.Exec(sql::WithSchema(R"sql(
INSERT INTO {schema}.workers (id, role, host, os_pid) VALUES ($1, $2, $3, $4::int)
ON CONFLICT (id) DO UPDATE SET heartbeat_at = now())sql",
                                   options_.schema),
                   {id_, role_, HostName(), std::to_string(getpid())});
}

void WorkerLoop::Run() {
  // The host names the instance in every line (the port's log sink does).
  const auto logger = log::Component("trellis::" + role_);
  std::atomic<int64_t>& running = RunningWorkers(role_);
  running.fetch_add(1, std::memory_order_relaxed);
  auto backoff = std::chrono::milliseconds(100);
  log::RecurringWarning cannot_connect(logger);
  while (!stopping()) {
    ConnectOptions worker_options = options_;
    worker_options.application_name = options_.application_name + " " + role_;
    auto conn = pg::Connection::Open(worker_options.url, worker_options.application_name);
    if (!conn.ok()) {
      cannot_connect.Occurred(role_ + " worker cannot connect: " + log::SafeForLog(conn.status()));
      SleepFor(backoff);
      backoff = std::min(backoff * 2, kMaxReconnectBackoff);
      continue;
    }
    cannot_connect.Cleared(role_ + " worker connected again");
    {
      std::lock_guard lock(mu_);
      current_ = conn->get();
    }
    pg::Connection& c = *conn.value();
    // Workers commit without waiting for the WAL flush. Safe: each worker
    // transaction is all-or-nothing and redoable (a lost staging batch leaves
    // its capture rows in place; a lost drain leaves its pages), and the
    // writes they stand for are the users' own durable commits. Without it,
    // every staging batch and drain pays a flush and doubles the flushes a
    // durable cluster does per user write (spec/engine.md, "Workers").
    if (Status async = c.Exec("SET synchronous_commit = off"); !async.ok()) {
      logger->warn("{} worker cannot turn synchronous_commit off: {}", role_,
                   log::SafeForLog(async));
    }
    auto last_beat = std::chrono::steady_clock::time_point{};
    bool ready = false;
    while (!stopping() && !c.broken()) {
      if (!ready) {
        auto prepared = Guarded([&] { return Prepare(c); });
        if (!prepared.ok()) {
          logger->warn("{} worker: {}", role_, log::SafeForLog(prepared.status()));
          break;
        }
        ready = prepared.value();
        if (!ready) {
          SleepFor(std::chrono::milliseconds(500));
          continue;
        }
      }
      auto now = std::chrono::steady_clock::now();
      if (now - last_beat >= kHeartbeatEvery) {
        Status beat = Heartbeat(c);
        if (!beat.ok()) {
          logger->warn("{} worker heartbeat failed: {}", role_, log::SafeForLog(beat));
          break;
        }
        last_beat = now;
      }
      auto worked = Guarded([&] { return Step(c); });
      if (!worked.ok()) {
        if (!stopping()) {
          logger->warn("{} worker step failed: {}", role_, log::SafeForLog(worked.status()));
          logger->debug("{} worker step failed: {}", role_, worked.status().message());
        }
        break;
      }
      backoff = std::chrono::milliseconds(100);
      if (!worked.value()) SleepFor(kIdleSleep);
    }
    {
      std::lock_guard lock(mu_);
      current_ = nullptr;
    }
    Disconnected();
    if (!stopping()) {
      SleepFor(backoff);
      backoff = std::min(backoff * 2, kMaxReconnectBackoff);
    } else if (!c.broken()) {
      (void)c.Exec(sql::WithSchema("DELETE FROM {schema}.workers WHERE id = $1", options_.schema),
                   {id_});
    }
  }
  running.fetch_sub(1, std::memory_order_relaxed);
}

}  // namespace trellis::workers
