// Behaviour of the trellis-testkit binary as its users see it: the URL it
// prints works, and every way of stopping it leaves no directory and no
// server process behind.

#include <signal.h>
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <regex>

#include "cluster_facts.h"
#include "intermediate_parent.h"
#include "pg_client.h"
#include "testkit_process.h"

namespace trellis::testkit::test {
namespace {

using namespace std::chrono_literals;

constexpr auto kStartTimeout = 60s;
constexpr auto kStopTimeout = 30s;
constexpr auto kOrphanCleanupTimeout = 15s;

// Starts a testkit and returns it with the URL it printed.
std::pair<std::unique_ptr<TestkitProcess>, std::string> StartTestkit(
    const std::vector<std::string>& args = {}, const std::vector<std::string>& env = {}) {
  std::unique_ptr<TestkitProcess> testkit = TestkitProcess::Start(args, env);
  REQUIRE(testkit);
  std::optional<std::string> url = testkit->ReadLine(kStartTimeout);
  INFO("testkit stderr:\n" << testkit->Stderr());
  REQUIRE(url);
  return {std::move(testkit), *url};
}

std::unique_ptr<PgClient> ConnectOrFail(const std::string& url) {
  std::string error;
  std::unique_ptr<PgClient> client = PgClient::Connect(url, &error);
  INFO("connecting to " << url << ": " << error);
  REQUIRE(client);
  return client;
}

ClusterFacts InspectOrFail(PgClient& client) {
  std::string error;
  std::optional<ClusterFacts> facts = InspectCluster(client, &error);
  INFO(error);
  REQUIRE(facts);
  REQUIRE(
      std::filesystem::path(facts->root_dir).filename().string().starts_with("trellis-testkit-"));
  return *facts;
}

TEST_CASE("closing stdin stops the testkit, leaving no directory or server process") {
  auto [testkit, url] = StartTestkit();
  CHECK(std::regex_match(url, std::regex(R"(postgresql://postgres@127\.0\.0\.1:\d+/postgres)")));

  // The connection stays open across the stop: a fast shutdown must not wait
  // for clients to leave.
  std::unique_ptr<PgClient> client = ConnectOrFail(url);
  std::optional<std::string> version = client->Scalar("SELECT version()");
  INFO(client->error());
  REQUIRE(version);
  CHECK(version->starts_with("PostgreSQL "));
  const ClusterFacts facts = InspectOrFail(*client);

  testkit->CloseStdin();
  INFO("testkit stderr:\n" << testkit->Stderr());
  CHECK(testkit->WaitExit(kStopTimeout) == 0);
  CHECK(testkit->ReadRemainingStdout(1s).empty());
  CHECK(Leftovers(facts).empty());
  CHECK(testkit->Stderr().find("stdin reached EOF") != std::string::npos);
}

TEST_CASE("SIGTERM and SIGINT stop the testkit cleanly") {
  const int signo = GENERATE(SIGTERM, SIGINT);
  auto [testkit, url] = StartTestkit();
  const ClusterFacts facts = InspectOrFail(*ConnectOrFail(url));

  testkit->Signal(signo);
  INFO("testkit stderr:\n" << testkit->Stderr());
  CHECK(testkit->WaitExit(kStopTimeout) == 0);
  CHECK(Leftovers(facts).empty());
  CHECK(testkit->Stderr().find(std::string("received SIG") + sigabbrev_np(signo)) !=
        std::string::npos);
}

TEST_CASE("a SIGKILLed parent leaves no cluster behind") {
  std::optional<IntermediateParent> parent = StartTestkitUnderIntermediate(kStartTimeout);
  REQUIRE(parent);
  const ClusterFacts facts = InspectOrFail(*ConnectOrFail(parent->url));

  REQUIRE(kill(parent->pid, SIGKILL) == 0);
  REQUIRE(waitpid(parent->pid, nullptr, 0) == parent->pid);
  CHECK(AwaitNoLeftovers(facts, kOrphanCleanupTimeout).empty());
}

TEST_CASE("a SIGKILLed testkit takes its server down, leaking only the directory") {
  auto [testkit, url] = StartTestkit();
  const ClusterFacts facts = InspectOrFail(*ConnectOrFail(url));

  testkit->Signal(SIGKILL);
  REQUIRE(testkit->WaitExit(kStopTimeout) == 128 + SIGKILL);
  CHECK(AwaitServerGone(facts, kOrphanCleanupTimeout));
  // The documented leak: nobody is left to remove the directory.
  REQUIRE(std::filesystem::exists(facts.root_dir));
  std::error_code ignored;
  std::filesystem::remove_all(facts.root_dir, ignored);
  CHECK(Leftovers(facts).empty());
}

TEST_CASE("two testkits at once serve two distinct working clusters") {
  auto [first, first_url] = StartTestkit();
  auto [second, second_url] = StartTestkit();
  CHECK(first_url != second_url);

  std::unique_ptr<PgClient> first_client = ConnectOrFail(first_url);
  std::unique_ptr<PgClient> second_client = ConnectOrFail(second_url);
  const ClusterFacts first_facts = InspectOrFail(*first_client);
  const ClusterFacts second_facts = InspectOrFail(*second_client);
  CHECK(first_facts.root_dir != second_facts.root_dir);
  // A table made in one cluster does not exist in the other.
  REQUIRE(first_client->Execute("CREATE TABLE only_in_first (id int)"));
  CHECK(first_client->Scalar("SELECT to_regclass('only_in_first') IS NOT NULL") == "t");
  CHECK(second_client->Scalar("SELECT to_regclass('only_in_first') IS NULL") == "t");

  first->CloseStdin();
  CHECK(first->WaitExit(kStopTimeout) == 0);
  CHECK(Leftovers(first_facts).empty());
  // The second cluster is untouched by the first one's shutdown.
  CHECK(second_client->Scalar("SELECT 1") == "1");
  second->CloseStdin();
  CHECK(second->WaitExit(kStopTimeout) == 0);
  CHECK(Leftovers(second_facts).empty());
}

TEST_CASE("the --tls option prints a verify-full URL that connects over TLS") {
  auto [testkit, url] = StartTestkit({"--tls"});
  CHECK(std::regex_match(
      url, std::regex(R"(postgresql://postgres@localhost:\d+/postgres\?sslmode=verify-full)"
                      R"(&sslrootcert=/.*/trellis-testkit-[^/]+/ca\.crt)")));

  std::unique_ptr<PgClient> client = ConnectOrFail(url);
  CHECK(client->Scalar("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()") == "t");
  const ClusterFacts facts = InspectOrFail(*client);

  testkit->CloseStdin();
  CHECK(testkit->WaitExit(kStopTimeout) == 0);
  CHECK(Leftovers(facts).empty());
}

TEST_CASE("durability is off by default and on with --durable") {
  auto [fast, fast_url] = StartTestkit();
  std::unique_ptr<PgClient> fast_client = ConnectOrFail(fast_url);
  CHECK(fast_client->Scalar("SHOW fsync") == "off");
  CHECK(fast_client->Scalar("SHOW synchronous_commit") == "off");

  auto [durable, durable_url] = StartTestkit({"--durable"});
  std::unique_ptr<PgClient> durable_client = ConnectOrFail(durable_url);
  CHECK(durable_client->Scalar("SHOW fsync") == "on");
  CHECK(durable_client->Scalar("SHOW synchronous_commit") == "on");
  CHECK(durable_client->Scalar("SHOW full_page_writes") == "on");

  for (auto* testkit : {fast.get(), durable.get()}) {
    testkit->CloseStdin();
    CHECK(testkit->WaitExit(kStopTimeout) == 0);
  }
}

// The default is left to the environment of the run: a CI leg may set
// TRELLIS_TESTKIT_LOGICAL=1 for every cluster, so this test sets it itself.
TEST_CASE("wal_level is replica by default and logical with --logical or the environment") {
  // The three start side by side: a cluster's start is mostly waiting.
  std::unique_ptr<TestkitProcess> plain = TestkitProcess::Start({}, {"TRELLIS_TESTKIT_LOGICAL=0"});
  std::unique_ptr<TestkitProcess> flagged =
      TestkitProcess::Start({"--logical"}, {"TRELLIS_TESTKIT_LOGICAL=0"});
  std::unique_ptr<TestkitProcess> from_env =
      TestkitProcess::Start({}, {"TRELLIS_TESTKIT_LOGICAL=1"});
  REQUIRE(plain);
  REQUIRE(flagged);
  REQUIRE(from_env);
  auto url_of = [](TestkitProcess& testkit) {
    std::optional<std::string> url = testkit.ReadLine(kStartTimeout);
    INFO("testkit stderr:\n" << testkit.Stderr());
    REQUIRE(url);
    return *url;
  };
  const std::string plain_url = url_of(*plain);
  const std::string flagged_url = url_of(*flagged);
  const std::string env_url = url_of(*from_env);

  CHECK(ConnectOrFail(plain_url)->Scalar("SHOW wal_level") == "replica");
  std::unique_ptr<PgClient> flagged_client = ConnectOrFail(flagged_url);
  CHECK(flagged_client->Scalar("SHOW wal_level") == "logical");
  CHECK(flagged_client->Scalar("SHOW max_replication_slots") == "64");
  CHECK(flagged_client->Scalar("SHOW max_wal_senders") == "64");
  // A slot with the built-in output plugin can be made: what capture by
  // logical decoding needs of the server.
  CHECK(flagged_client->Scalar("SELECT slot_name FROM pg_create_logical_replication_slot("
                               "'testkit_probe', 'pgoutput')") == "testkit_probe");
  CHECK(ConnectOrFail(env_url)->Scalar("SHOW wal_level") == "logical");

  for (auto* testkit : {plain.get(), flagged.get(), from_env.get()}) {
    testkit->CloseStdin();
    CHECK(testkit->WaitExit(kStopTimeout) == 0);
  }
}

TEST_CASE("TRELLIS_TESTKIT_LOGICAL other than 0 or 1 exits 2 naming it") {
  std::unique_ptr<TestkitProcess> testkit =
      TestkitProcess::Start({}, {"TRELLIS_TESTKIT_LOGICAL=yes"});
  REQUIRE(testkit);
  CHECK(testkit->WaitExit(kStopTimeout) == 2);
  CHECK(testkit->ReadRemainingStdout(1s).empty());
  CHECK(testkit->Stderr().find("TRELLIS_TESTKIT_LOGICAL is 'yes'") != std::string::npos);
}

TEST_CASE("a server that dies makes the testkit exit 3 after cleaning up") {
  auto [testkit, url] = StartTestkit();
  const ClusterFacts facts = InspectOrFail(*ConnectOrFail(url));
  const pid_t postmaster = facts.server_pids.back();

  REQUIRE(kill(postmaster, SIGKILL) == 0);
  INFO("testkit stderr:\n" << testkit->Stderr());
  CHECK(testkit->WaitExit(kStopTimeout) == 3);
  CHECK(Leftovers(facts).empty());
  CHECK(testkit->Stderr().find("postgres was killed by SIGKILL unexpectedly") != std::string::npos);
}

TEST_CASE("the --help option prints usage on stderr and nothing on stdout") {
  std::unique_ptr<TestkitProcess> testkit = TestkitProcess::Start({"--help"});
  REQUIRE(testkit);
  CHECK(testkit->WaitExit(kStopTimeout) == 0);
  CHECK(testkit->ReadRemainingStdout(1s).empty());
  CHECK(testkit->Stderr().starts_with(
      "usage: trellis-testkit [--tls] [--durable] [--logical] [--keep] [--help]"));
}

TEST_CASE("an unknown argument exits 2 naming it") {
  std::unique_ptr<TestkitProcess> testkit = TestkitProcess::Start({"--frobnicate"});
  REQUIRE(testkit);
  CHECK(testkit->WaitExit(kStopTimeout) == 2);
  CHECK(testkit->ReadRemainingStdout(1s).empty());
  CHECK(testkit->Stderr().find("unknown argument '--frobnicate'") != std::string::npos);
}

TEST_CASE("missing server binaries exit 1 with a message naming the override") {
  std::unique_ptr<TestkitProcess> testkit =
      TestkitProcess::Start({}, {"TRELLIS_PG_BIN=/nonexistent/pg/bin"});
  REQUIRE(testkit);
  CHECK(testkit->WaitExit(kStopTimeout) == 1);
  CHECK(testkit->ReadRemainingStdout(1s).empty());
  CHECK(testkit->Stderr().find("TRELLIS_PG_BIN=/nonexistent/pg/bin does not hold") !=
        std::string::npos);
}

}  // namespace
}  // namespace trellis::testkit::test
