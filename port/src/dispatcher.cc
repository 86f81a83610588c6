#include "dispatcher.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <exception>

#include "telemetry/series.h"

namespace trellis::port {

namespace asio = boost::asio;
using std::chrono::milliseconds;
using std::chrono::steady_clock;

namespace {

// timeout_ms may be any positive uint64; a deadline past this is as good as
// none and keeps steady_clock arithmetic far from overflow.
constexpr uint64_t kMaxTimeoutMs = uint64_t{30} * 24 * 60 * 60 * 1000;

const char* const kShutDownMessage = "the handle was shut down";

}  // namespace

protocol::ErrorInfo ErrorInfoFromStatus(const Status& status) {
  protocol::ErrorInfo error;
  error.code = std::string(CodeName(status.code()));
  error.message = status.message();
  error.sqlstate = status.sqlstate;
  error.detail = status.detail;
  error.hint = status.hint;
  return error;
}

Dispatcher::Dispatcher(asio::io_context& io, std::shared_ptr<FrameWriter> out,
                       const OpRegistry& ops, std::shared_ptr<telemetry::LogSink> log_sink)
    : io_(io), out_(std::move(out)), ops_(ops), log_sink_(std::move(log_sink)) {}

void Dispatcher::CountCall(const std::string& op, std::string_view result,
                           steady_clock::time_point received) {
  const double seconds = std::chrono::duration<double>(steady_clock::now() - received).count();
  telemetry::kCalls.With({op, result}).Add();
  telemetry::kCallDuration.With({op}).Observe(seconds);
}

Dispatcher::~Dispatcher() {
  if (pool_) pool_->Stop();
}

void Dispatcher::HandleRequest(protocol::Request request, steady_clock::time_point received) {
  if (shut_down_) {
    const Op* known = ops_.Find(request.op);
    CountCall(known ? known->name : "unknown", CodeName(Code::kValidation), received);
    SendReply(request.call_id, Status::Validation(kShutDownMessage));
    return;
  }
  if (calls_.count(request.call_id)) {
    // Replying would give the BEAM two replies for one id.
    SendErrorEvent("call id " + std::to_string(request.call_id) +
                   " is already in flight; the second request with it (op \"" + request.op +
                   "\") was ignored");
    return;
  }
  const Op* op = ops_.Find(request.op);
  if (!op) {
    // One label value for every unknown op: a label must not take whatever
    // string a request carries.
    CountCall("unknown", CodeName(Code::kValidation), received);
    SendReply(request.call_id, Status::Validation("unknown op \"" + request.op + "\""));
    return;
  }
  if (op->kind == OpKind::kInline) {
    RunInline(*op, request, received);
  } else {
    QueueDatabaseCall(*op, request, received);
  }
}

void Dispatcher::RunInline(const Op& op, protocol::Request& request,
                           steady_clock::time_point received) {
  Result<protocol::Value> result = Status::Internal("the op returned no result");
  try {
    result = op.run_inline(*this, request.args);
  } catch (const std::exception& e) {
    result = Status::Internal("op \"" + op.name + "\" threw: " + e.what());
  }
  CountCall(op.name, result.ok() ? "ok" : CodeName(result.status().code()), received);
  SendReply(request.call_id, std::move(result));
  if (shutdown_requested_ && on_shutdown_requested_) {
    shutdown_requested_ = false;
    on_shutdown_requested_();
  }
}

void Dispatcher::QueueDatabaseCall(const Op& op, protocol::Request& request,
                                   steady_clock::time_point received) {
  if (op.needs_connection && state_ != State::kConnected) {
    CountCall(op.name, CodeName(Code::kValidation), received);
    SendReply(request.call_id,
              Status::Validation(state_ == State::kConnecting
                                     ? "not connected: call connect first (a connect is running)"
                                     : "not connected: call connect first"));
    return;
  }
  if (op.admit) {
    Status admitted = Status::Internal("the admit hook returned nothing");
    try {
      admitted = op.admit(*this, request.args);
    } catch (const std::exception& e) {
      admitted = Status::Internal("op \"" + op.name + "\" threw: " + e.what());
    }
    if (!admitted.ok()) {
      CountCall(op.name, CodeName(admitted.code()), received);
      SendReply(request.call_id, admitted);
      return;
    }
  }
  if (!pool_) {
    Status missing = Status::Internal("op \"" + op.name + "\" was admitted with no session pool");
    CountCall(op.name, CodeName(missing.code()), received);
    if (op.finish) op.finish(*this, missing, nullptr);
    SendReply(request.call_id, missing);
    return;
  }

  const uint64_t timeout_ms =
      std::min(request.timeout_ms.value_or(protocol::kDefaultTimeoutMs), kMaxTimeoutMs);
  auto call = std::make_shared<Call>(request.call_id, op, std::move(request.args),
                                     milliseconds(timeout_ms), received);
  auto [it, inserted] = calls_.try_emplace(call->id, call, pool_, io_);
  it->second.deadline.expires_at(received + call->timeout);
  it->second.deadline.async_wait(
      [self = shared_from_this(), call](const boost::system::error_code& error) {
        if (!error) self->OnDeadline(call);
      });
  pool_->Submit(std::move(call));
}

void Dispatcher::OnDeadline(const std::shared_ptr<Call>& call) {
  auto it = calls_.find(call->id);
  if (it == calls_.end() || it->second.call != call) return;
  const auto ms = std::to_string(call->timeout.count());
  Status timeout;
  if (StopWork(it->second)) {
    const int size = it->second.pool->size();
    const int open = it->second.pool->open_sessions();
    timeout =
        Status::Timeout("op \"" + call->op.name + "\" waited its whole " + ms +
                        " ms budget for a database session: all " + std::to_string(open) +
                        " sessions of the pool (pool_size " + std::to_string(size) + ") were busy" +
                        (open < size ? "; more could not be opened (see the log)" : ""));
  } else {
    timeout = Status::Timeout("op \"" + call->op.name + "\" ran past its " + ms +
                              " ms deadline; its statement was cancelled on the server");
  }
  Finish(it, timeout, Result<protocol::Value>(timeout));
}

void Dispatcher::OnCompleted(const std::shared_ptr<Call>& call, Result<protocol::Value> result) {
  auto it = calls_.find(call->id);
  // Gone or replaced: the call timed out, was cancelled or shut down, and its
  // reply (if any) has been sent. The late result is dropped.
  if (it == calls_.end() || it->second.call != call) return;
  const Status outcome = result.ok() ? Status::OK() : result.status();
  Finish(it, outcome, std::move(result));
}

void Dispatcher::HandleCancel(uint64_t call_id) {
  auto it = calls_.find(call_id);
  if (it == calls_.end()) return;
  StopWork(it->second);
  Finish(it, Status::Validation("the call was cancelled"), std::nullopt);
}

bool Dispatcher::StopWork(PendingCall& entry) {
  if (entry.pool->Remove(entry.call)) {
    entry.call->cancel_requested = true;
    return true;
  }
  canceller_.Cancel(entry.call);
  return false;
}

void Dispatcher::Finish(CallTable::iterator it, const Status& outcome,
                        std::optional<Result<protocol::Value>> reply) {
  std::shared_ptr<Call> call = std::move(it->second.call);
  calls_.erase(it);  // destroys the deadline timer, cancelling its wait
  CountCall(call->op.name,
            !reply         ? "cancelled"
            : outcome.ok() ? "ok"
                           : CodeName(outcome.code()),
            call->received);
  if (call->op.finish) {
    const protocol::Value* value = reply && reply->ok() ? &reply->value() : nullptr;
    call->op.finish(*this, outcome, value);
  }
  if (reply) SendReply(call->id, std::move(*reply));
}

void Dispatcher::ShutDown(std::optional<Status> answer) {
  if (shut_down_) return;
  shut_down_ = true;
  const Status outcome = answer.value_or(Status::Validation(kShutDownMessage));
  while (!calls_.empty()) {
    auto it = calls_.begin();
    StopWork(it->second);
    Finish(it, outcome, answer ? std::optional<Result<protocol::Value>>(*answer) : std::nullopt);
  }
  if (pool_) pool_->Stop();
  // Not joined: the process exits right after the flush, and the server ends
  // the workers' sessions (their heartbeats expire within seconds).
  if (background_) background_->RequestStop();
}

void Dispatcher::WaitCancelsSent(steady_clock::time_point deadline) {
  canceller_.WaitSent(deadline);
}

Status Dispatcher::BeginConnect(HandleConfig config) {
  if (state_ == State::kConnected) {
    return Status::Validation(
        "already connected: a handle connects once; start another port to connect elsewhere");
  }
  if (state_ == State::kConnecting) return Status::Validation("a connect is already running");
  std::weak_ptr<Dispatcher> weak = weak_from_this();
  auto executor = io_.get_executor();
  pool_ = std::make_shared<WorkerPool>(
      config.options, static_cast<int>(config.pool_size),
      [weak, executor](const std::shared_ptr<Call>& call, Result<protocol::Value> result) {
        asio::post(executor, [weak, call, result = std::move(result)]() mutable {
          if (auto self = weak.lock()) self->OnCompleted(call, std::move(result));
        });
      });
  telemetry::kPoolMax.Get().Set(config.pool_size);
  config_ = std::move(config);
  state_ = State::kConnecting;
  return Status::OK();
}

void Dispatcher::EndConnect(bool ok, const std::string& instance) {
  if (state_ != State::kConnecting) return;
  if (ok) {
    state_ = State::kConnected;
    config_->instance = instance;
    if (log_sink_) log_sink_->set_instance(instance);
    spdlog::info("connected to {} (pool_size {}, staging {}, drain_threads {})",
                 RedactUrl(config_->options.url), config_->pool_size, config_->staging,
                 config_->drain_threads);
    if (config_->staging || config_->drain_threads > 0) {
      background_ = BackgroundWorkers::Start(config_->options, config_->staging,
                                             static_cast<int>(config_->drain_threads));
    }
    return;
  }
  if (pool_) pool_->Stop();
  pool_.reset();
  config_.reset();
  telemetry::kPoolMax.Get().Set(0);
  state_ = State::kDisconnected;
}

void Dispatcher::SendReply(uint64_t call_id, Result<protocol::Value> result) {
  // Built in place inside the Message, so the value is moved, never copied.
  protocol::Message message(std::in_place_type<protocol::Reply>);
  auto& reply = std::get<protocol::Reply>(message);
  reply.call_id = call_id;
  if (result.ok()) {
    reply.result = std::move(result.value());
  } else {
    reply.result = ErrorInfoFromStatus(result.status());
  }
  if (out_->Send(message) || out_->failed()) return;
  // Over the frame limit: the BEAM could not read it, so say so instead.
  protocol::Reply too_big;
  too_big.call_id = call_id;
  too_big.result = ErrorInfoFromStatus(Status::Internal(
      "the reply to call " + std::to_string(call_id) + " is over the 16 MiB frame limit"));
  out_->Send(too_big);
}

void Dispatcher::SendErrorEvent(const std::string& message) {
  out_->Send(
      protocol::Event{"error", protocol::MakeMap({{"code", "protocol"}, {"message", message}})});
}

}  // namespace trellis::port
