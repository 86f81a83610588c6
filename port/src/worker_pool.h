// Runs database calls on worker threads, each with a session of its own.
//
// Why threads and blocking libpq: every engine call is a sequence of blocking
// libpq calls, and the engine stays a plain synchronous library that knows
// nothing of Asio. Running each call on a worker thread keeps the io thread
// free for frames, deadlines and cancels; a nonblocking libpq state machine per
// engine operation would buy nothing at pool sizes of 1..100.
#pragma once

#include <functional>
#include <memory>

#include "call.h"
#include "trellis/engine.h"
#include "trellis/protocol/value.h"

namespace trellis::port {

// One worker thread per pool slot, started only when a queued call finds no
// idle worker, so the pool grows lazily up to `size`. A worker that takes a
// call makes sure it holds a usable session first: it replaces one that
// broke or that the server closed while it sat idle (a restart), and if it
// cannot open one while other workers hold sessions, it puts the call back
// for them and ends, so a thread without a session never takes calls (the
// role's connection slots may be full). The pool tries to grow again after a
// backoff. When no worker holds a session, the call fails with the reason.
// Calls wait in one FIFO queue.
//
// Thread-safety: every method may be called from any thread. Workers are
// detached and hold the pool's shared state themselves, so Stop() and the
// destructor never wait for a worker stuck in libpq.
class WorkerPool {
 public:
  // Called on the worker thread with the call's result (or the reason it
  // could not run). Not called for a call removed by Remove() or Stop(), or
  // skipped because cancel_requested was set before it started.
  using Done = std::function<void(const std::shared_ptr<Call>&, Result<protocol::Value>)>;

  // REQUIRES: size >= 1.
  WorkerPool(ConnectOptions options, int size, Done done);
  ~WorkerPool();  // Stop()
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  void Submit(std::shared_ptr<Call> call);
  // Takes the call out of the queue. False when a worker already took it.
  bool Remove(const std::shared_ptr<Call>& call);
  // Drops the queued calls and lets every worker end after its current call.
  void Stop();

  int size() const { return size_; }
  // Sessions open now (at most size()).
  int open_sessions() const;

 private:
  struct Shared;
  enum class SessionOutcome { kReady, kFailed, kLeave };
  static void WorkerLoop(std::shared_ptr<Shared> shared);
  static SessionOutcome EnsureSession(Shared& shared, std::unique_ptr<Session>& session,
                                      const std::shared_ptr<Call>& call);

  const int size_;
  std::shared_ptr<Shared> shared_;
};

}  // namespace trellis::port
