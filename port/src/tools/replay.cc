// `trellis-port replay FILE --url URL`: turns a capture into a reproducible
// run. Starts a fresh port (this executable, with pipes on fds 3 and 4, as
// the BEAM would), re-sends the captured requests in their recorded order,
// one at a time, with the connect request's URL replaced by URL, and compares
// each reply with the recorded one by the rules of spec/protocol.md section 9.
#include <cstdio>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "capture.h"
#include "tools/child_port.h"
#include "tools/tools.h"
#include "trellis/protocol/codec.h"

namespace trellis::port {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

constexpr int kExitSame = 0;
constexpr int kExitDiffer = 1;
constexpr int kExitFailed = 2;
// How long past a request's own timeout_ms replay waits for its reply.
constexpr milliseconds kReplyGrace{10'000};
constexpr milliseconds kHelloWait{10'000};
constexpr milliseconds kExitWait{5'000};

// Result keys whose values legitimately change from run to run or from one
// database to another (spec section 9): ignored at any depth of an ok value.
const std::set<std::string, std::less<>> kTimeVaryingKeys = {
    "server_version",  // the server may have been upgraded
    "engine_version",  // so may the engine
    "url",             // replay substitutes --url
    "instance",        // names the database, which --url may change
    // Times: every one the protocol carries (epoch microseconds).
    "created_at",
    "paused_at",
    "last_applied_at",
    "started_at",
    "finished_at",
};

// Ops whose ok values describe the run itself: counters and timings
// (metrics), or an opaque snapshot made fresh each time (watermark_token).
// Two ok replies to them match whatever their values. A call that passes a
// token back sends the recorded one, which the replayed database may not
// understand, so replaying convergence waits is best effort.
const std::set<std::string, std::less<>> kRunDescribingOps = {"metrics", "watermark_token"};

// The child port sends log events of this level and above; replay shows
// them on stderr.
const char* const kChildLogLevel = "warning";

struct CapturedCall {
  protocol::Request request;
  std::optional<protocol::Reply> reply;  // none: cancelled or never answered
};

void Note(const std::string& message) {
  std::fprintf(stderr, "trellis-port replay: %s\n", message.c_str());
}

protocol::Value WithoutTimeVarying(const protocol::Value& value) {
  if (value.is_array()) {
    protocol::Array out;
    for (const auto& item : value.as_array()) out.push_back(WithoutTimeVarying(item));
    return out;
  }
  if (value.is_map()) {
    protocol::Map out;
    for (const auto& [key, item] : value.as_map()) {
      if (key.is_string() && kTimeVaryingKeys.count(key.as_string())) continue;
      out.emplace_back(key, WithoutTimeVarying(item));
    }
    return out;
  }
  return value;
}

// Ok replies match when their values match without the time-varying keys;
// error replies when their code and SQLSTATE match (messages name hosts,
// backend pids and durations).
bool SameReply(const std::string& op, const protocol::Reply& recorded,
               const protocol::Reply& replayed) {
  if (recorded.ok() != replayed.ok()) return false;
  if (recorded.ok() && kRunDescribingOps.count(op)) return true;
  if (recorded.ok()) {
    return WithoutTimeVarying(std::get<protocol::Value>(recorded.result)) ==
           WithoutTimeVarying(std::get<protocol::Value>(replayed.result));
  }
  const auto& a = std::get<protocol::ErrorInfo>(recorded.result);
  const auto& b = std::get<protocol::ErrorInfo>(replayed.result);
  return a.code == b.code && a.sqlstate == b.sqlstate;
}

std::string Show(const protocol::Reply& reply) {
  if (reply.ok()) return "ok " + protocol::ToDisplayString(std::get<protocol::Value>(reply.result));
  const auto& error = std::get<protocol::ErrorInfo>(reply.result);
  std::string text = "error " + error.code + ": " + error.message;
  if (error.sqlstate) text += " (sqlstate " + *error.sqlstate + ")";
  return text;
}

// Pairs each captured request with the first reply to its id after it.
std::vector<CapturedCall> CallsOf(const Capture& capture) {
  std::vector<CapturedCall> calls;
  std::unordered_map<uint64_t, size_t> waiting;  // call id -> index in calls
  for (const auto& record : capture.records) {
    auto decoded = protocol::DecodeMessage(record.body);
    auto* message = std::get_if<protocol::Message>(&decoded);
    if (!message) continue;
    if (record.direction == Direction::kIn) {
      if (auto* request = std::get_if<protocol::Request>(message)) {
        waiting[request->call_id] = calls.size();
        calls.push_back(CapturedCall{std::move(*request), std::nullopt});
      }
    } else if (auto* reply = std::get_if<protocol::Reply>(message)) {
      auto it = waiting.find(reply->call_id);
      if (it == waiting.end()) continue;
      calls[it->second].reply = std::move(*reply);
      waiting.erase(it);
    }
  }
  return calls;
}

// The next reply from the port, skipping events.
Result<protocol::Reply> NextReply(ChildPort& port, steady_clock::time_point deadline) {
  for (;;) {
    auto body = port.Receive(deadline);
    if (!body.ok()) return body.status();
    auto decoded = protocol::DecodeMessage(body.value());
    if (auto* error = std::get_if<protocol::DecodeError>(&decoded)) {
      return Status::Protocol("the port sent an undecodable frame: " + error->message);
    }
    auto& message = std::get<protocol::Message>(decoded);
    if (auto* reply = std::get_if<protocol::Reply>(&message)) return std::move(*reply);
    if (auto* event = std::get_if<protocol::Event>(&message)) {
      const protocol::Value payload(event->payload);
      const protocol::Value* text = payload.Find("message");
      if (event->kind == "log" && text && text->is_string()) {
        Note("log: " + text->as_string());
      } else {
        Note("event " + event->kind + " " + protocol::ToDisplayString(event->payload));
      }
    }
  }
}

void SubstituteUrl(protocol::Request& request, const std::string& url) {
  if (request.op != "connect") return;
  for (auto& [key, value] : request.args) {
    if (key.is_string() && key.as_string() == "url") value = url;
  }
}

}  // namespace

int RunReplay(const std::string& path, const std::string& url) {
  auto capture = ReadCapture(path);
  if (!capture.ok()) {
    Note(capture.status().message());
    return kExitFailed;
  }
  if (capture.value().truncated) Note(path + " ends inside a record; replaying what is complete");
  const std::vector<CapturedCall> calls = CallsOf(capture.value());

  auto self = SelfExecutable();
  if (!self.ok()) {
    Note(self.status().message());
    return kExitFailed;
  }
  auto spawned = ChildPort::Spawn(self.value(), {"--log-level", kChildLogLevel});
  if (!spawned.ok()) {
    Note(spawned.status().message());
    return kExitFailed;
  }
  ChildPort& port = *spawned.value();
  auto hello = port.Receive(steady_clock::now() + kHelloWait);
  if (!hello.ok()) {
    Note("no hello from the port: " + hello.status().message());
    return kExitFailed;
  }

  int replayed = 0, differ = 0, skipped = 0;
  for (const auto& captured : calls) {
    if (!captured.reply) {
      ++skipped;
      Note("call " + std::to_string(captured.request.call_id) + " (" + captured.request.op +
           ") has no recorded reply (cancelled or unanswered): not replayed");
      continue;
    }
    protocol::Request request = captured.request;
    SubstituteUrl(request, url);
    if (Status sent = port.Send(protocol::EncodeMessage(request)); !sent.ok()) {
      Note("call " + std::to_string(request.call_id) + ": " + sent.message());
      return kExitFailed;
    }
    const auto budget = milliseconds(request.timeout_ms.value_or(protocol::kDefaultTimeoutMs));
    auto reply = NextReply(port, steady_clock::now() + budget + kReplyGrace);
    if (!reply.ok()) {
      Note("call " + std::to_string(request.call_id) + " (" + request.op +
           "): no reply: " + reply.status().message());
      return kExitFailed;
    }
    if (reply.value().call_id != request.call_id) {
      Note("the port replied to call " + std::to_string(reply.value().call_id) +
           " while replay waited for call " + std::to_string(request.call_id));
      return kExitFailed;
    }
    ++replayed;
    if (!SameReply(request.op, *captured.reply, reply.value())) {
      ++differ;
      std::printf("call %llu (%s) differs:\n  recorded: %s\n  replayed: %s\n",
                  static_cast<unsigned long long>(request.call_id), request.op.c_str(),
                  Show(*captured.reply).c_str(), Show(reply.value()).c_str());
    }
  }
  port.CloseInput();
  port.Wait(steady_clock::now() + kExitWait);

  std::printf("replayed %d calls: %d differ, %d skipped\n", replayed, differ, skipped);
  std::fflush(stdout);
  return differ == 0 ? kExitSame : kExitDiffer;
}

}  // namespace trellis::port
