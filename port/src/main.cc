// trellis-port: the Erlang port program of Trellis (see port/README.md).
//
//   trellis-port [--record FILE]        serve protocol v1 on fds 3 and 4
//   trellis-port decode FILE            print a capture, one line per frame
//   trellis-port replay FILE --url URL  re-run a capture's requests, diff replies
//   trellis-port --version | --help
#include <fcntl.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <boost/asio/io_context.hpp>

#include "capture.h"
#include "memory.h"
#include "server.h"
#include "telemetry/log_level.h"
#include "telemetry/log_sink.h"
#include "tools/tools.h"
#include "trellis/engine.h"

namespace trellis::port {
namespace {

constexpr int kInFd = 3;
constexpr int kOutFd = 4;

const char* const kUsage =
    "usage:\n"
    "  trellis-port [--record FILE] [--log-level LEVEL]\n"
    "                                      serve protocol v1 on fds 3 (in) and 4 (out);\n"
    "                                      started by the trellis_pg package as an Erlang port.\n"
    "                                      Log lines go to the BEAM as log events, those at\n"
    "                                      LEVEL or above: debug, info (default), warning,\n"
    "                                      error, critical or off\n"
    "  trellis-port decode FILE            print a capture file, one line per frame\n"
    "  trellis-port replay FILE --url URL  re-send a capture's requests against URL and\n"
    "                                      compare the replies (exit 1 if any differ)\n"
    "  trellis-port --version              print the engine version\n"
    "  trellis-port --help                 print this text\n"
    "exit statuses (port mode): 0 stopped (shutdown, EOF on fd 3, SIGTERM/SIGINT),\n"
    "  1 could not start, 2 bad command line, 3 framing lost (frame over 16 MiB)\n";

int Usage(const std::string& problem) {
  std::fprintf(stderr, "trellis-port: %s\n%s", problem.c_str(), kUsage);
  return kExitUsage;
}

// The port's own lines are logged as this component; the engine's carry
// theirs ("trellis::drain", ...).
const char* const kPortLoggerName = "trellis::port";

// The level from TRELLIS_LOG_LEVEL (a protocol level name or spdlog's), or
// info. The --log-level flag overrides it when serving.
spdlog::level::level_enum EnvLogLevel() {
  const char* name = std::getenv("TRELLIS_LOG_LEVEL");
  if (!name) return spdlog::level::info;
  if (auto level = telemetry::ParseWireLevel(name)) return *level;
  return spdlog::level::from_str(name);
}

// Lines go to stderr until serving starts: the command-line tools, and a
// port whose fds 3 and 4 are not usable. Stdout belongs to the BEAM (and to
// the tools' output).
void LogToStderr() {
  auto logger = spdlog::stderr_logger_mt(kPortLoggerName);
  logger->set_pattern("trellis-port %Y-%m-%dT%H:%M:%S.%e [%l] %n: %v");
  spdlog::set_default_logger(std::move(logger));
  spdlog::set_level(EnvLogLevel());
}

// Serving: lines go to the BEAM as log events through `sink`, and stderr
// keeps only crash output.
void LogToBeam(std::shared_ptr<telemetry::LogSink> sink, spdlog::level::level_enum level) {
  auto logger = std::make_shared<spdlog::logger>(kPortLoggerName, std::move(sink));
  spdlog::set_default_logger(std::move(logger));
  spdlog::set_level(level);
}

bool FdOpen(int fd) { return fcntl(fd, F_GETFD) != -1; }

int Serve(const std::optional<std::string>& record_path,
          std::optional<spdlog::level::level_enum> log_level) {
  const auto start = std::chrono::steady_clock::now();
  if (!FdOpen(kInFd) || !FdOpen(kOutFd)) {
    spdlog::error("{}",
                  "fds 3 and 4 are not open: trellis-port is an Erlang port program, started "
                  "with Port.open({:spawn_executable, path}, [:binary, {:packet, 4}, "
                  ":nouse_stdio, :exit_status]); see trellis-port --help");
    return kExitStartFailed;
  }
  std::unique_ptr<CaptureWriter> capture;
  if (record_path) {
    auto opened = CaptureWriter::Open(*record_path, start);
    if (!opened.ok()) {
      spdlog::error("{}", opened.status().message());
      return kExitStartFailed;
    }
    capture = std::move(opened.value());
  }
  auto sink = std::make_shared<telemetry::LogSink>();
  LogToBeam(sink, log_level.value_or(EnvLogLevel()));
  try {
    boost::asio::io_context io(1);
    auto server = std::make_shared<Server>(io, kInFd, kOutFd, std::move(capture), sink);
    server->Start();
    io.run();
  } catch (const std::exception& e) {
    // Only a failure to set up the fds (e.g. fd 3 is a regular file, which
    // epoll refuses) gets here; serving itself reports errors as values.
    // Nothing can carry a log event, so this is stderr's.
    std::fprintf(stderr, "trellis-port: cannot serve on fds 3 and 4: %s\n", e.what());
    std::fflush(stderr);
    std::_Exit(kExitStartFailed);
  }
  std::_Exit(kExitOk);
}

int Run(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() == 1 && (args[0] == "--help" || args[0] == "-h")) {
    std::fputs(kUsage, stderr);
    return kExitOk;
  }
  if (args.size() == 1 && args[0] == "--version") {
    std::printf("trellis-port %s (protocol %lld.%lld)\n", std::string(kEngineVersion).c_str(),
                static_cast<long long>(protocol::kProtocolMajor),
                static_cast<long long>(protocol::kProtocolMinor));
    return kExitOk;
  }
  if (!args.empty() && args[0] == "decode") {
    if (args.size() != 2) return Usage("decode takes one FILE");
    return RunDecode(args[1]);
  }
  if (!args.empty() && args[0] == "replay") {
    if (args.size() != 4 || args[2] != "--url") return Usage("replay takes FILE --url URL");
    return RunReplay(args[1], args[3]);
  }
  std::optional<std::string> record_path;
  std::optional<spdlog::level::level_enum> log_level;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--record" && i + 1 < args.size() && !record_path) {
      record_path = args[++i];
    } else if (args[i] == "--log-level" && i + 1 < args.size() && !log_level) {
      log_level = telemetry::ParseWireLevel(args[++i]);
      if (!log_level) {
        return Usage("--log-level must be " + telemetry::ThresholdChoices() + ", got \"" + args[i] +
                     "\"");
      }
    } else {
      return Usage("unexpected argument \"" + args[i] + "\"");
    }
  }
  return Serve(record_path, log_level);
}

}  // namespace
}  // namespace trellis::port

int main(int argc, char** argv) {
  // A closed pipe must be an error value on write, not a killed process.
  std::signal(SIGPIPE, SIG_IGN);
  trellis::port::ConfigureMalloc();  // before any thread starts
  // Until serving starts (and for the tools), lines go to stderr.
  trellis::port::LogToStderr();
  return trellis::port::Run(argc, argv);
}
