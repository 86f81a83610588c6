// The log ops: set_log_level changes the most verbose level the port sends;
// log_test_line is a diagnostic that logs lines on demand, so an operator (or
// a test) can see a line of each level travel to Logger.
#include <spdlog/spdlog.h>

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "args.h"
#include "op_registry.h"
#include "port_context.h"
#include "telemetry/log_level.h"

namespace trellis::port {
namespace {

constexpr int64_t kMaxTestLines = 10'000'000;

Result<spdlog::level::level_enum> RequireLevel(const protocol::Map& args, bool allow_off) {
  auto name = RequireString(args, "level");
  if (!name.ok()) return name.status();
  auto level = telemetry::ParseWireLevel(name.value());
  if (!level || (!allow_off && *level == spdlog::level::off)) {
    return Status::Validation("argument \"level\" must be " +
                              std::string(allow_off ? telemetry::ThresholdChoices()
                                                    : "debug, info, warning, error or critical") +
                              ", got \"" + name.value() + "\"");
  }
  return *level;
}

Result<protocol::Value> SetLogLevel(PortContext&, const protocol::Map& args) {
  auto level = RequireLevel(args, /*allow_off=*/true);
  if (!level.ok()) return level.status();
  // Every logger, the engine components' included (they are registered).
  spdlog::set_level(level.value());
  return protocol::Value();
}

struct TestLines {
  spdlog::level::level_enum level;
  std::string message;
  int64_t count;
};

void Emit(const TestLines& lines) {
  for (int64_t i = 1; i <= lines.count; ++i) {
    if (lines.count == 1) {
      spdlog::log(lines.level, "{}", lines.message);
    } else {
      spdlog::log(lines.level, "{} ({}/{})", lines.message, i, lines.count);
    }
  }
}

// One thread of its own logs the background requests in arrival order, as
// the engine's worker threads would, never on the io thread.
class BackgroundEmitter {
 public:
  static BackgroundEmitter& Get() {
    static BackgroundEmitter* emitter = new BackgroundEmitter();  // never joined
    return *emitter;
  }
  void Submit(TestLines lines) {
    {
      std::lock_guard lock(mu_);
      queue_.push_back(std::move(lines));
    }
    wake_.notify_one();
  }

 private:
  BackgroundEmitter() {
    std::thread([this] { Run(); }).detach();
  }
  void Run() {
    for (;;) {
      TestLines lines;
      {
        std::unique_lock lock(mu_);
        wake_.wait(lock, [this] { return !queue_.empty(); });
        lines = std::move(queue_.front());
        queue_.pop_front();
      }
      Emit(lines);
    }
  }

  std::mutex mu_;
  std::condition_variable wake_;
  std::deque<TestLines> queue_;
};

Result<protocol::Value> LogTestLine(PortContext&, const protocol::Map& args) {
  auto level = RequireLevel(args, /*allow_off=*/false);
  if (!level.ok()) return level.status();
  auto message = OptionalString(args, "message", "test line");
  if (!message.ok()) return message.status();
  auto count = OptionalInt(args, "count", 1, 1, kMaxTestLines);
  if (!count.ok()) return count.status();
  auto background = OptionalBool(args, "background", false);
  if (!background.ok()) return background.status();

  TestLines lines{level.value(), "log_test_line: " + message.value(), count.value()};
  if (background.value()) {
    BackgroundEmitter::Get().Submit(std::move(lines));
  } else {
    Emit(lines);
  }
  return protocol::Value();
}

const OpRegistrar kSetLogLevel(InlineOp("set_log_level", SetLogLevel));
const OpRegistrar kLogTestLine(InlineOp("log_test_line", LogTestLine));

}  // namespace
}  // namespace trellis::port
