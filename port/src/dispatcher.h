// Turns requests and cancels into calls: looks the op up, runs inline ops at
// once, queues database ops on the worker pool, enforces deadlines, and
// writes exactly one reply per call (none for a cancelled call).
#pragma once

#include <utility>  // before Asio: GCC 12 needs it for Boost 1.74's headers

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <unordered_map>

#include "call.h"
#include "canceller.h"
#include "frame_writer.h"
#include "op_registry.h"
#include "port_context.h"
#include "telemetry/log_sink.h"
#include "trellis/protocol/message.h"
#include "trellis/workers.h"
#include "worker_pool.h"

namespace trellis::port {

// Thread-safety: io thread only, except the worker pool's completion callback,
// which only posts to the io thread. Handlers hold shared_from_this().
class Dispatcher : public PortContext, public std::enable_shared_from_this<Dispatcher> {
 public:
  // `log_sink` (may be null) learns the instance once connect succeeds.
  Dispatcher(boost::asio::io_context& io, std::shared_ptr<FrameWriter> out, const OpRegistry& ops,
             std::shared_ptr<telemetry::LogSink> log_sink = nullptr);
  ~Dispatcher() override;
  Dispatcher(const Dispatcher&) = delete;
  Dispatcher& operator=(const Dispatcher&) = delete;

  // `received` is when the frame was read: the call's deadline counts from it.
  void HandleRequest(protocol::Request request, std::chrono::steady_clock::time_point received);
  // Drops a queued call or cancels a running one; it gets no reply. An
  // unknown id (already answered, or never seen) is ignored.
  void HandleCancel(uint64_t call_id);

  bool IsInFlight(uint64_t call_id) const { return calls_.count(call_id) != 0; }

  // Ends every call in flight: cancels running statements, drops queued
  // calls, stops the pool. When `answer` is set each call gets an error reply
  // with it. Later requests are answered "the handle was shut down".
  void ShutDown(std::optional<Status> answer);

  // Blocks until the cancels of running statements were sent, or `deadline`.
  void WaitCancelsSent(std::chrono::steady_clock::time_point deadline);

  // Called (io thread) after the reply to a `shutdown` op was queued.
  void set_on_shutdown_requested(std::function<void()> f) { on_shutdown_requested_ = std::move(f); }

  // PortContext.
  bool connected() const override { return state_ == State::kConnected; }
  const HandleConfig* config() const override { return config_ ? &*config_ : nullptr; }
  Status BeginConnect(HandleConfig config) override;
  void EndConnect(bool ok, const std::string& instance) override;
  void RequestShutdown() override { shutdown_requested_ = true; }

 private:
  enum class State { kDisconnected, kConnecting, kConnected };

  // A database call the io thread still owes a reply.
  struct PendingCall {
    PendingCall(std::shared_ptr<Call> call, std::shared_ptr<WorkerPool> pool,
                boost::asio::io_context& io)
        : call(std::move(call)), pool(std::move(pool)), deadline(io) {}
    std::shared_ptr<Call> call;
    std::shared_ptr<WorkerPool> pool;  // the pool it was queued on
    boost::asio::steady_timer deadline;
  };
  using CallTable = std::unordered_map<uint64_t, PendingCall>;

  void RunInline(const Op& op, protocol::Request& request,
                 std::chrono::steady_clock::time_point received);
  void QueueDatabaseCall(const Op& op, protocol::Request& request,
                         std::chrono::steady_clock::time_point received);
  void OnDeadline(const std::shared_ptr<Call>& call);
  void OnCompleted(const std::shared_ptr<Call>& call, Result<protocol::Value> result);
  // Stops the call's work: out of the queue if it is still there, else a
  // server-side cancel. True when it was still queued.
  bool StopWork(PendingCall& entry);
  // Removes the call from the table and runs its finish hook; sends `reply`
  // unless it is nullopt.
  void Finish(CallTable::iterator it, const Status& outcome,
              std::optional<Result<protocol::Value>> reply);
  void SendReply(uint64_t call_id, Result<protocol::Value> result);
  // Counts a call's end in the metrics: its op ("unknown" for an op the port
  // does not have), its result ("ok", an error code, or "cancelled") and its
  // time since `received`.
  static void CountCall(const std::string& op, std::string_view result,
                        std::chrono::steady_clock::time_point received);
  void SendErrorEvent(const std::string& message);

  boost::asio::io_context& io_;
  std::shared_ptr<FrameWriter> out_;
  const OpRegistry& ops_;
  std::shared_ptr<telemetry::LogSink> log_sink_;
  CallTable calls_;
  Canceller canceller_;
  std::shared_ptr<WorkerPool> pool_;
  // The staging worker and drain threads, started once connect succeeds.
  std::unique_ptr<BackgroundWorkers> background_;
  std::optional<HandleConfig> config_;
  State state_ = State::kDisconnected;
  bool shutdown_requested_ = false;
  bool shut_down_ = false;
  std::function<void()> on_shutdown_requested_;
};

// The reply error map of spec section 3 for a failed Status.
protocol::ErrorInfo ErrorInfoFromStatus(const Status& status);

}  // namespace trellis::port
