#include "server.h"

#include <spdlog/spdlog.h>

#include <boost/asio/error.hpp>
#include <csignal>
#include <cstdlib>

#include "hello.h"
#include "op_registry.h"
#include "telemetry/series.h"
#include "trellis/options.h"
#include "trellis/protocol/codec.h"

namespace trellis::port {

namespace asio = boost::asio;
using std::chrono::steady_clock;

namespace {

std::string_view MessageTypeName(const protocol::Message& message) {
  switch (message.index()) {
    case 0:
      return "request";
    case 1:
      return "reply";
    case 2:
      return "cancel";
    default:
      return "event";
  }
}

// The request with every "url" argument's password replaced, so a capture
// never holds one (the connect URL is the only one today).
std::optional<std::string> RedactedRequestBody(const protocol::Request& request) {
  bool changed = false;
  protocol::Request copy = request;
  for (auto& [key, value] : copy.args) {
    if (key.is_string() && key.as_string() == "url" && value.is_string()) {
      std::string redacted = RedactUrl(value.as_string());
      if (redacted != value.as_string()) {
        value = std::move(redacted);
        changed = true;
      }
    }
  }
  if (!changed) return std::nullopt;
  return protocol::EncodeMessage(copy);
}

}  // namespace

Server::Server(asio::io_context& io, int in_fd, int out_fd, std::unique_ptr<CaptureWriter> capture,
               std::shared_ptr<telemetry::LogSink> log_sink)
    : io_(io),
      in_(io, in_fd),
      capture_(std::move(capture)),
      out_(std::make_shared<FrameWriter>(io, out_fd, capture_.get())),
      dispatcher_(std::make_shared<Dispatcher>(io, out_, OpRegistry::Global(), log_sink)),
      signals_(io, SIGTERM, SIGINT),
      exit_timer_(io) {
  if (log_sink) log_pump_ = std::make_shared<telemetry::LogPump>(io, std::move(log_sink), out_);
  metrics_pump_ = telemetry::MetricsPump::Start(io, out_);
}

void Server::Start() {
  out_->Send(HelloEvent());
  if (log_pump_) {
    std::weak_ptr<telemetry::LogPump> pump = log_pump_;
    out_->set_on_written([pump] {
      if (auto self = pump.lock()) self->OnWritten();
    });
    log_pump_->Start();
  }
  std::weak_ptr<Server> weak = weak_from_this();
  out_->set_on_failure([weak] {
    if (auto self = weak.lock()) self->Stop(kExitOk, std::nullopt, "the output fd closed");
  });
  dispatcher_->set_on_shutdown_requested([weak] {
    if (auto self = weak.lock()) {
      self->Stop(kExitOk, Status::Validation("the handle was shut down"), "the shutdown op");
    }
  });
  signals_.async_wait(
      [self = shared_from_this()](const boost::system::error_code& error, int signal) {
        if (error) return;
        self->Stop(kExitOk, Status::Validation("the handle was shut down"),
                   signal == SIGTERM ? "SIGTERM" : "SIGINT");
      });
  ReadSome();
}

void Server::ReadSome() {
  in_.async_read_some(asio::buffer(read_buffer_),
                      [self = shared_from_this()](const boost::system::error_code& error,
                                                  size_t bytes) { self->OnRead(error, bytes); });
}

void Server::OnRead(const boost::system::error_code& error, size_t bytes) {
  if (stopping_) return;
  if (error) {
    const std::string why = error == asio::error::eof
                                ? std::string("EOF on fd 3 (the BEAM closed the port)")
                                : "reading fd 3 failed: " + error.message();
    Stop(kExitOk, Status::Validation("the handle was shut down"), why);
    return;
  }
  reader_.Feed(std::string_view(read_buffer_.data(), bytes));
  // Frames completed before a bad length prefix are still served.
  while (auto body = reader_.Next()) {
    HandleBody(*body);
    if (stopping_) return;
  }
  if (reader_.framing_lost()) {
    const std::string message =
        "frame length " + std::to_string(reader_.bad_length()) +
        " is over the 16 MiB limit; framing is lost, so the port exits (status 3)";
    SendErrorEvent(message);
    Stop(kExitFramingLost, std::nullopt, message);
    return;
  }
  ReadSome();
}

void Server::HandleBody(const std::string& body) {
  const steady_clock::time_point received = steady_clock::now();
  static telemetry::Counter& frames_in = telemetry::kFrames.With({"in"});
  static telemetry::Counter& bytes_in = telemetry::kBytes.With({"in"});
  frames_in.Add();
  bytes_in.Add(protocol::kFrameHeaderBytes + body.size());
  auto decoded = protocol::DecodeMessage(body);
  if (capture_) Record(body, decoded);

  if (auto* error = std::get_if<protocol::DecodeError>(&decoded)) {
    const std::string message = "undecodable frame: " + error->message;
    if (error->call_id && !dispatcher_->IsInFlight(*error->call_id)) {
      protocol::Reply reply;
      reply.call_id = *error->call_id;
      reply.result = ErrorInfoFromStatus(Status::Protocol(message));
      out_->Send(reply);
    } else {
      SendErrorEvent(message);
    }
    return;
  }
  auto& message = std::get<protocol::Message>(decoded);
  if (auto* request = std::get_if<protocol::Request>(&message)) {
    dispatcher_->HandleRequest(std::move(*request), received);
  } else if (auto* cancel = std::get_if<protocol::Cancel>(&message)) {
    dispatcher_->HandleCancel(cancel->call_id);
  } else {
    SendErrorEvent("unexpected " + std::string(MessageTypeName(message)) +
                   " message: the BEAM sends only requests and cancels");
  }
}

void Server::Record(const std::string& body,
                    const std::variant<protocol::Message, protocol::DecodeError>& decoded) {
  if (auto* message = std::get_if<protocol::Message>(&decoded)) {
    if (auto* request = std::get_if<protocol::Request>(message)) {
      if (auto redacted = RedactedRequestBody(*request)) {
        capture_->Record(Direction::kIn, *redacted);
        return;
      }
    }
  }
  capture_->Record(Direction::kIn, body);
}

void Server::SendErrorEvent(const std::string& message) {
  out_->Send(
      protocol::Event{"error", protocol::MakeMap({{"code", "protocol"}, {"message", message}})});
}

void Server::Stop(int status, std::optional<Status> answer, const std::string& why) {
  if (stopping_) return;
  stopping_ = true;
  exit_status_ = status;
  exit_deadline_ = steady_clock::now() + kExitBudget;
  spdlog::info("stopping ({}), exit status {}", why, status);
  boost::system::error_code ignored;
  in_.cancel(ignored);
  signals_.cancel(ignored);
  dispatcher_->ShutDown(std::move(answer));
  // The counts of the calls just ended reach the VM too.
  metrics_pump_->Stop();
  // The lines logged so far (this one included) go out before the flush.
  if (log_pump_) log_pump_->SendAll();

  // Exit once fd 4 is flushed, or after kFlushBudget if the BEAM stopped
  // reading it: a full pipe must not keep the process alive.
  std::weak_ptr<Server> weak = weak_from_this();
  out_->Flush([weak] {
    if (auto self = weak.lock()) self->Exit();
  });
  exit_timer_.expires_after(kFlushBudget);
  exit_timer_.async_wait([weak](const boost::system::error_code& error) {
    if (error) return;
    if (auto self = weak.lock()) self->Exit();
  });
}

void Server::Exit() {
  if (exited_) return;
  exited_ = true;
  // Statements still running would outlive us on the server (a backend
  // waiting on a lock does not notice its client is gone), so the cancels go
  // out before the connections close.
  dispatcher_->WaitCancelsSent(exit_deadline_);
  capture_.reset();  // closes the file
  std::fflush(stderr);
  std::_Exit(exit_status_);
}

}  // namespace trellis::port
