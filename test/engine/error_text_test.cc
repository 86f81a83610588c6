// The error texts users see never quote the SQL the engine generated
// (issue 17 item 10), and the pinned session settings (item 9).
#include <catch2/catch.hpp>

#include "pg/error_text.h"
#include "pg/session_settings.h"

namespace trellis::pg {
namespace {

TEST_CASE("MessageLines keeps the messages and drops every line quoting a statement", "[pg]") {
  const std::string text =
      "ERROR:  column \"nope\" does not exist\n"
      "LINE 1: ...TEMP VIEW trellis_definition_check AS SELECT (nope) AS \"p\"...\n"
      "                                                          ^\n"
      "HINT:  Perhaps you meant to reference the column \"w.price\".\n"
      "QUERY:  SELECT secret FROM trellis.transforms\n"
      "CONTEXT:  PL/pgSQL function trellis_capture() line 3\n"
      "    at SQL statement\n"
      "FATAL:  terminating connection due to administrator command\n"
      "server closed the connection unexpectedly\n"
      "\tThis probably means the server terminated abnormally\n";
  const std::string kept = MessageLines(text);
  CHECK(kept ==
        "column \"nope\" does not exist; terminating connection due to administrator command; "
        "server closed the connection unexpectedly; This probably means the server terminated "
        "abnormally");
  CHECK(kept.find("trellis_definition_check") == std::string::npos);
  CHECK(kept.find("SELECT") == std::string::npos);
}

TEST_CASE("MessageLines of a one-line text is that line", "[pg]") {
  CHECK(MessageLines("no connection to the server\n") == "no connection to the server");
  CHECK(MessageLines("") == "");
}

TEST_CASE("a lost connection's message says what happened and what to do", "[pg]") {
  const std::string message = ConnectionLostMessage("server closed the connection unexpectedly");
  CHECK(message.rfind("the connection to the database was lost during the call (server closed",
                      0) == 0);
  CHECK(message.find("retry") != std::string::npos);
}

TEST_CASE("the pinned settings follow the URL's own options, so they win", "[pg]") {
  const std::string options = WithPinnedSettings("-c standard_conforming_strings=off");
  CHECK(options.rfind("-c standard_conforming_strings=off -c standard_conforming_strings=on", 0) ==
        0);
  CHECK(options.find("-c default_transaction_isolation=read\\ committed") != std::string::npos);
  CHECK(WithPinnedSettings("").rfind("-c standard_conforming_strings=on", 0) == 0);
}

}  // namespace
}  // namespace trellis::pg
