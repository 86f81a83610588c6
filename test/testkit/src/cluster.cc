#include "cluster.h"

#include <libpq-fe.h>
#include <signal.h>
#include <sys/wait.h>

#include <cctype>
#include <chrono>
#include <filesystem>
#include <memory>
#include <thread>
#include <vector>

#include "file_tail.h"
#include "free_port.h"
#include "subprocess.h"

namespace trellis::testkit {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using std::chrono::seconds;
using std::chrono::steady_clock;

constexpr int kPortAttempts = 5;
constexpr seconds kReadyTimeout{30};
constexpr milliseconds kReadyPollInterval{50};
constexpr seconds kFastShutdownGrace{10};
constexpr seconds kImmediateShutdownGrace{5};
constexpr milliseconds kExitPollInterval{10};
constexpr int kLogTailLines = 30;
// The FATAL line a postmaster logs when it could bind none of its -h
// addresses; the LOG line naming the cause is below log_min_messages.
constexpr const char* kNoSocketsMessage = "could not create any TCP/IP sockets";

// Settings for a disposable test server: durability off unless --durable (a crash loses a
// cluster nobody keeps), room for many test connections and for engine
// transactions touching many tables, and a quiet log.
const std::vector<std::string> kNoDurability = {
    "fsync=off",
    "synchronous_commit=off",
    "full_page_writes=off",
};
const std::vector<std::string> kServerSettings = {
    "max_connections=200",
    "shared_buffers=128MB",
    "max_locks_per_transaction=256",
    "log_min_messages=warning",
};

// Settings for capture by logical decoding (--logical): the WAL carries what
// decoding needs, and there is room for the slots and WAL senders of many
// engines and tests: every test database that captured by logical decoding
// keeps its slot unless the test drops it, and the suite's logical leg runs
// about 30 (the defaults, 10 each, are one busy test's worth).
const std::vector<std::string> kLogicalDecoding = {
    "wal_level=logical",
    "max_replication_slots=64",
    "max_wal_senders=64",
};

struct ConnCloser {
  void operator()(PGconn* conn) const { PQfinish(conn); }
};
struct ResultClearer {
  void operator()(PGresult* result) const { PQclear(result); }
};

// Percent-encodes a file path for the query part of a URL; '/' stays.
std::string PercentEncodePath(const std::string& path) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string encoded;
  for (const unsigned char c : path) {
    if (std::isalnum(c) || c == '/' || c == '-' || c == '.' || c == '_' || c == '~') {
      encoded += static_cast<char>(c);
    } else {
      encoded += '%';
      encoded += kHex[c >> 4];
      encoded += kHex[c & 0xF];
    }
  }
  return encoded;
}

// Waits up to `grace` for `pid` to exit, reaping it. Returns true if it did.
bool AwaitExit(pid_t pid, std::chrono::steady_clock::duration grace) {
  const auto deadline = steady_clock::now() + grace;
  while (steady_clock::now() < deadline) {
    if (TryReap(pid)) return true;
    std::this_thread::sleep_for(kExitPollInterval);
  }
  return TryReap(pid).has_value();
}

}  // namespace

Cluster::Cluster(ClusterConfig config)
    : config_(std::move(config)),
      data_dir_((fs::path(config_.root_dir) / "data").string()),
      log_path_((fs::path(config_.root_dir) / "postgres.log").string()) {}

Cluster::~Cluster() { Stop(); }

Status Cluster::Init(ShutdownWatch& watch) {
  SpawnSpec spec{{(fs::path(config_.bin_dir) / "initdb").string(), "-D", data_dir_, "-U",
                  "postgres", "--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync"},
                 (fs::path(config_.root_dir) / "initdb.log").string(),
                 config_.root_dir,
                 config_.run_as,
                 SIGKILL};
  return RunToCompletion(spec, "initdb", watch);
}

Status Cluster::Start(ShutdownWatch& watch) {
  for (int attempt = 1; attempt <= kPortAttempts; ++attempt) {
    Result<int> port = PickFreePort();
    if (!port.ok()) return port.status();
    Status status = Status::Ok();
    switch (StartOnPort(port.value(), watch, &status)) {
      case Attempt::kReady:
        return Status::Ok();
      case Attempt::kPortTaken:
        Stop();
        continue;
      case Attempt::kFailed:
        Stop();
        return status;
    }
  }
  return Status::Error("postgres found its port taken " + std::to_string(kPortAttempts) +
                       " times in a row; the end of its log:\n" + LogTail());
}

Cluster::Attempt Cluster::StartOnPort(int port, ShutdownWatch& watch, Status* status) {
  const std::string postgres = (fs::path(config_.bin_dir) / "postgres").string();
  std::vector<std::string> argv = {postgres, "-D", data_dir_, "-k", config_.root_dir};
  argv.insert(argv.end(), {"-p", std::to_string(port), "-h", "127.0.0.1"});
  std::vector<std::string> settings = kServerSettings;
  if (!config_.durable) settings.insert(settings.end(), kNoDurability.begin(), kNoDurability.end());
  if (config_.logical) {
    settings.insert(settings.end(), kLogicalDecoding.begin(), kLogicalDecoding.end());
  }
  if (config_.tls) {
    settings.insert(settings.end(), {"ssl=on", "ssl_cert_file=" + config_.tls->server_cert,
                                     "ssl_key_file=" + config_.tls->server_key});
  }
  for (const std::string& setting : settings) argv.insert(argv.end(), {"-c", setting});

  Result<pid_t> started =
      Spawn(SpawnSpec{argv, log_path_, config_.root_dir, config_.run_as, SIGQUIT});
  if (!started.ok()) {
    *status = started.status();
    return Attempt::kFailed;
  }
  postmaster_ = started.value();

  // Readiness is probed without TLS so that a TLS misconfiguration shows up
  // as VerifyUrl's clear error rather than as a 30-second timeout.
  const std::string probe = "host=127.0.0.1 port=" + std::to_string(port) +
                            " user=postgres dbname=postgres sslmode=disable connect_timeout=2";
  const auto deadline = steady_clock::now() + kReadyTimeout;
  for (;;) {
    if (std::optional<std::string> exit = CheckExited()) {
      const std::string tail = LogTail();
      if (tail.find(kNoSocketsMessage) != std::string::npos) return Attempt::kPortTaken;
      *status = Status::Error("postgres " + *exit + " while starting; the end of its log (" +
                              log_path_ + "):\n" + tail);
      return Attempt::kFailed;
    }
    const PGPing ping = PQping(probe.c_str());
    if (ping == PQPING_OK) break;
    if (ping == PQPING_NO_ATTEMPT) {
      *status = Status::Error("libpq refused the probe connection string: " + probe);
      return Attempt::kFailed;
    }
    if (steady_clock::now() >= deadline) {
      *status = Status::Error("postgres did not accept connections within " +
                              std::to_string(kReadyTimeout.count()) + " s; the end of its log (" +
                              log_path_ + "):\n" + LogTail());
      return Attempt::kFailed;
    }
    if (watch.WaitForStop(kReadyPollInterval)) {
      *status = Status::Aborted(watch.stop_reason());
      return Attempt::kFailed;
    }
  }

  url_ = MakeUrl(port);
  port_ = port;
  bool other_cluster = false;
  *status = VerifyUrl(&other_cluster);
  if (other_cluster) return Attempt::kPortTaken;
  if (!status->ok()) return Attempt::kFailed;
  segment_ = ReadSysvSegment(data_dir_);
  return Attempt::kReady;
}

// Connects with the very URL the caller will get and checks it reaches this
// cluster: a server another process started on the same port in the window
// between PickFreePort and our bind would also answer the probe.
Status Cluster::VerifyUrl(bool* other_cluster) const {
  const char* keys[] = {"dbname", "connect_timeout", nullptr};
  const char* values[] = {url_.c_str(), "5", nullptr};
  std::unique_ptr<PGconn, ConnCloser> conn(PQconnectdbParams(keys, values, 1));
  if (PQstatus(conn.get()) != CONNECTION_OK) {
    return Status::Error("the server is up but " + url_ +
                         " does not connect: " + PQerrorMessage(conn.get()));
  }
  std::unique_ptr<PGresult, ResultClearer> result(PQexec(conn.get(), "SHOW data_directory"));
  if (PQresultStatus(result.get()) != PGRES_TUPLES_OK || PQntuples(result.get()) != 1) {
    return Status::Error("SHOW data_directory failed on " + url_ + ": " +
                         PQerrorMessage(conn.get()));
  }
  std::error_code ec;
  if (!fs::equivalent(PQgetvalue(result.get(), 0, 0), data_dir_, ec)) {
    *other_cluster = true;
    return Status::Error(url_ + " reaches another server, in " + PQgetvalue(result.get(), 0, 0));
  }
  return Status::Ok();
}

std::string Cluster::MakeUrl(int port) const {
  if (!config_.tls) return "postgresql://postgres@127.0.0.1:" + std::to_string(port) + "/postgres";
  return "postgresql://postgres@localhost:" + std::to_string(port) +
         "/postgres?sslmode=verify-full&sslrootcert=" + PercentEncodePath(config_.tls->ca_cert);
}

Status Cluster::Restart(int shutdown_signal, ShutdownWatch& watch) {
  if (postmaster_ > 0) {
    kill(postmaster_, shutdown_signal);
    if (!AwaitExit(postmaster_, kFastShutdownGrace)) {
      kill(postmaster_, SIGKILL);
      waitpid(postmaster_, nullptr, 0);
    }
    postmaster_ = -1;
  }
  // An immediate shutdown leaves backends to exit on their own.
  KillRemainingChildren();
  Status status = Status::Ok();
  switch (StartOnPort(port_, watch, &status)) {
    case Attempt::kReady:
      return Status::Ok();
    case Attempt::kPortTaken:
      return Status::Error("port " + std::to_string(port_) + " was taken while postgres restarted");
    case Attempt::kFailed:
      break;
  }
  return status;
}

std::optional<std::string> Cluster::CheckExited() {
  if (postmaster_ <= 0) return std::nullopt;
  std::optional<int> status = TryReap(postmaster_);
  if (!status) return std::nullopt;
  postmaster_ = -1;
  return DescribeWaitStatus(*status);
}

void Cluster::Stop() {
  if (postmaster_ > 0) {
    kill(postmaster_, SIGINT);
    if (!AwaitExit(postmaster_, kFastShutdownGrace)) {
      kill(postmaster_, SIGQUIT);
      if (!AwaitExit(postmaster_, kImmediateShutdownGrace)) {
        kill(postmaster_, SIGKILL);
        waitpid(postmaster_, nullptr, 0);
      }
    }
    postmaster_ = -1;
  }
  // Backends outlive a postmaster that was killed; as a child subreaper this
  // process inherited them.
  KillRemainingChildren();
  if (segment_) RemoveOrphanedSysvSegment(*segment_);
  segment_.reset();
}

std::string Cluster::LogTail() const { return FileTail(log_path_, kLogTailLines); }

}  // namespace trellis::testkit
