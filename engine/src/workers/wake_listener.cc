#include "workers/wake_listener.h"

#include "log/component_log.h"
#include "log/recurring_warning.h"
#include "trellis/engine_metrics.h"
#include "workers/wake_channel.h"
#include "workers/worker_loop.h"

namespace trellis::workers {
namespace {

constexpr auto kFirstBackoff = std::chrono::milliseconds(100);

std::atomic<uint64_t>& RemoteWakes(const std::string& role) {
  auto& metrics = GlobalEngineMetrics();
  return role == "staging" ? metrics.remote_staging_wakes : metrics.remote_drain_wakes;
}

}  // namespace

WakeListener::WakeListener(ConnectOptions options, std::vector<std::string> roles)
    : WorkerLoop(std::move(options), "wake_listener", MakeWorkerId("wake_listener")),
      roles_(std::move(roles)) {}

WakeListener::~WakeListener() { Stop(); }

Status WakeListener::Listen(pg::ListenSession& session, const std::function<void()>& listening) {
  std::vector<std::string> channels;
  for (const auto& role : roles_) channels.push_back(WakeChannel(options().schema, role));
  TRELLIS_RETURN_IF_ERROR(session.Listen(channels));
  listening();
  // Work made while no session listened (before the first connect, or
  // while reconnecting) woke nobody here: look for it once now. A wasted
  // nudge costs an idle worker one look for work.
  for (const auto& role : roles_) WorkerLoop::NudgeRole(role);
  auto last_check = std::chrono::steady_clock::now();
  while (!stopping()) {
    auto received = session.Await(kWaitSlice);
    if (!received.ok()) return received.status();
    for (const auto& n : received.value()) {
      // This process's own commits nudged its workers in-process already;
      // nudging them again would be harmless (an idle worker looks for work
      // once more) but is not a wake from another port.
      if (n.payload == WakeSender()) continue;
      auto role = WakeRole(options().schema, n.channel);
      if (!role) continue;
      WorkerLoop::NudgeRole(*role);
      RemoteWakes(*role).fetch_add(1, std::memory_order_relaxed);
    }
    if (const auto now = std::chrono::steady_clock::now(); now - last_check >= kCheckEvery) {
      TRELLIS_RETURN_IF_ERROR(session.Check());
      last_check = now;
    }
  }
  return Status::OK();
}

void WakeListener::Run() {
  const auto logger = log::Component("trellis::wake_listener");
  // One warning while connecting or listening keeps failing, and one line
  // when it listens again: the workers poll meanwhile, so nothing is lost
  // but up to an idle pause per wake.
  log::RecurringWarning failing(logger);
  auto backoff = kFirstBackoff;
  while (!stopping()) {
    auto session =
        pg::ListenSession::Open(options().url, options().application_name + " wake listener");
    Status ended = session.ok() ? Status::OK() : session.status();
    if (session.ok()) {
      ended = Listen(*session.value(), [&] {
        failing.Cleared("wake listener listening again");
        backoff = kFirstBackoff;
      });
    }
    if (stopping()) break;
    failing.Occurred(
        "wake listener is not listening (other ports' wakes wait for the "
        "workers' polls until it is back): " +
        log::SafeForLog(ended));
    SleepFor(backoff);
    backoff = std::min(backoff * 2, kMaxReconnectBackoff);
  }
}

}  // namespace trellis::workers
