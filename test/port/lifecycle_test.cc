// How the port starts and stops without a database: command line, the
// shutdown op, EOF on fd 3, signals.
#include <signal.h>

#include <catch2/catch.hpp>

#include "port_process.h"

namespace trellis::port_test {
namespace {

using std::chrono::steady_clock;

TEST_CASE("the shutdown op replies null, then the port exits 0", "[port][lifecycle]") {
  PortProcess port;
  REQUIRE(port.ReceiveHello());
  auto reply = port.Call(1, "shutdown");
  REQUIRE(reply);
  CHECK(reply->call_id == 1);
  CHECK(Show(*reply) == "ok null");
  CHECK(port.OutputClosed(1s));
  CHECK(port.WaitExit(1s) == 0);
}

TEST_CASE("EOF on fd 3 makes the port exit 0", "[port][lifecycle]") {
  PortProcess port;
  REQUIRE(port.ReceiveHello());
  const auto start = steady_clock::now();
  port.CloseInput();
  CHECK(port.WaitExit(1s) == 0);
  CHECK(steady_clock::now() - start < 1s);
}

TEST_CASE("SIGTERM and SIGINT make the port exit 0", "[port][lifecycle]") {
  const int signal = GENERATE(SIGTERM, SIGINT);
  PortProcess port;
  REQUIRE(port.ReceiveHello());
  REQUIRE(port.Call(1, "ping"));  // serving, so the handler is installed
  kill(port.pid(), signal);
  CHECK(port.WaitExit(1s) == 0);
}

TEST_CASE("the port exits 1 when fds 3 and 4 are not open", "[port][lifecycle]") {
  ToolRun run = RunTool({});
  CHECK(run.status == 1);
  CHECK(run.out.empty());  // never a byte on stdout
}

TEST_CASE("--version prints the engine and protocol versions", "[port][cli]") {
  ToolRun run = RunTool({"--version"});
  CHECK(run.status == 0);
  CHECK(run.out == "trellis-port " TRELLIS_VERSION " (protocol 1.0)\n");
}

TEST_CASE("--help exits 0 and bad command lines exit 2", "[port][cli]") {
  CHECK(RunTool({"--help"}).status == 0);
  CHECK(RunTool({"--bogus"}).status == 2);
  CHECK(RunTool({"--record"}).status == 2);
  CHECK(RunTool({"decode"}).status == 2);
  CHECK(RunTool({"replay", "file"}).status == 2);
}

}  // namespace
}  // namespace trellis::port_test
