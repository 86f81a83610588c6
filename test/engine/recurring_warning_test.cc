// RecurringWarning: one line when a condition starts, a counted reminder at
// its interval, one line when it clears (issue 17 item 11).
#include <spdlog/sinks/ostream_sink.h>

#include <catch2/catch.hpp>
#include <sstream>
#include <thread>

#include "log/recurring_warning.h"

namespace trellis::log {
namespace {

struct CapturedLogger {
  CapturedLogger() {
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out);
    sink->set_pattern("%l %v");
    logger = std::make_shared<spdlog::logger>("recurring_warning_test", sink);
    logger->set_level(spdlog::level::info);
  }
  std::vector<std::string> Lines() {
    std::vector<std::string> lines;
    std::istringstream in(out.str());
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
  }
  std::ostringstream out;
  std::shared_ptr<spdlog::logger> logger;
};

TEST_CASE("a lasting condition logs once, then reminders with a count, then its end", "[log]") {
  CapturedLogger captured;
  RecurringWarning warning(captured.logger, std::chrono::seconds(1));
  CHECK_FALSE(warning.active());
  warning.Cleared("connected");  // nothing to clear: no line
  for (int i = 0; i < 50; ++i) warning.Occurred("cannot connect: refused");
  CHECK(warning.active());
  REQUIRE(captured.Lines().size() == 1);
  CHECK(captured.Lines()[0] ==
        "warning cannot connect: refused (retrying; a reminder follows every 1 s while this "
        "lasts)");

  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  warning.Occurred("cannot connect: refused");
  REQUIRE(captured.Lines().size() == 2);
  CHECK(captured.Lines()[1].rfind("warning still failing: 50 times in the last 1 s", 0) == 0);

  warning.Cleared("connected again");
  REQUIRE(captured.Lines().size() == 3);
  CHECK(captured.Lines()[2].rfind("info connected again after 51 failed attempts over 1 s", 0) ==
        0);
  CHECK_FALSE(warning.active());
  warning.Cleared("connected again");
  CHECK(captured.Lines().size() == 3);
}

}  // namespace
}  // namespace trellis::log
