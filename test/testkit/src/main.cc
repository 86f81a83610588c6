// trellis-testkit: starts a throwaway PostgreSQL cluster, prints its URL on
// stdout and removes it again when told to stop. See ../README.md.

#include <sys/prctl.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

#include "cluster.h"
#include "executables.h"
#include "options.h"
#include "server_account.h"
#include "shutdown_watch.h"
#include "temp_dir.h"
#include "tls_files.h"

namespace trellis::testkit {
namespace {

constexpr int kExitStopped = 0;
constexpr int kExitStartFailed = 1;
constexpr int kExitUsage = 2;
constexpr int kExitServerDied = 3;
constexpr std::chrono::milliseconds kSupervisePollInterval{250};

// Everything but the URL goes to stderr, so stdout carries exactly one line.
void Note(const std::string& message) {
  std::fprintf(stderr, "trellis-testkit: %s\n", message.c_str());
}

// A failed startup step: an aborted one is a stop requested meanwhile.
int StartupFailure(const Status& status) {
  if (status.aborted()) {
    Note("stopping before the cluster was ready: " + status.message());
    return kExitStopped;
  }
  Note(status.message());
  return kExitStartFailed;
}

// Keeps the running cluster until a stop is requested or the server dies.
int Supervise(Cluster& cluster, ShutdownWatch& watch) {
  for (;;) {
    if (std::optional<std::string> exit = cluster.CheckExited()) {
      Note("postgres " + *exit + " unexpectedly; the end of its log:\n" + cluster.LogTail());
      return kExitServerDied;
    }
    if (watch.WaitForStop(kSupervisePollInterval)) {
      Note("stopping: " + watch.stop_reason());
      return kExitStopped;
    }
    if (std::optional<int> signal = watch.TakeRestartRequest()) {
      Note(std::string("restarting postgres (") + (*signal == SIGINT ? "fast" : "immediate") +
           " shutdown)");
      if (Status status = cluster.Restart(*signal, watch); !status.ok()) {
        if (status.aborted()) {
          Note("stopping during a restart: " + status.message());
          return kExitStopped;
        }
        Note("restart failed: " + status.message());
        return kExitServerDied;
      }
      Note("restarted, postmaster pid " + std::to_string(cluster.postmaster_pid()));
    }
  }
}

// Prepares, starts and serves the cluster in `dir`; the Cluster's
// destructor stops the server before the caller removes the directory.
int Serve(const Options& options, const std::string& bin_dir,
          const std::optional<Credentials>& account, TempDir& dir, ShutdownWatch& watch) {
  std::optional<TlsFiles> tls;
  if (options.tls) {
    Result<TlsFiles> files = WriteTlsFiles(dir.path(), dir.path() + "/openssl.log", watch);
    if (!files.ok()) return StartupFailure(files.status());
    tls = files.value();
  }
  if (account) {
    if (Status status = dir.ChownTo(*account); !status.ok()) return StartupFailure(status);
  }

  Cluster cluster(
      ClusterConfig{bin_dir, dir.path(), account, tls, options.durable, options.logical});
  if (Status status = cluster.Init(watch); !status.ok()) return StartupFailure(status);
  if (Status status = cluster.Start(watch); !status.ok()) return StartupFailure(status);

  Note("cluster in " + dir.path() + ", postmaster pid " + std::to_string(cluster.postmaster_pid()));
  if (std::printf("%s\n", cluster.url().c_str()) < 0 || std::fflush(stdout) != 0) {
    Note(std::string("cannot write the URL to stdout: ") + std::strerror(errno));
    return kExitStartFailed;
  }
  return Supervise(cluster, watch);
}

int Run(int argc, char** argv) {
  Result<Options> options = ParseOptions(argc, argv, std::getenv("TRELLIS_TESTKIT_LOGICAL"));
  if (!options.ok()) {
    Note(options.status().message());
    std::fputs(UsageText(), stderr);
    return kExitUsage;
  }
  if (options.value().help) {
    std::fputs(UsageText(), stderr);
    return kExitStopped;
  }
  // A reader that went away must not kill us before we clean up.
  std::signal(SIGPIPE, SIG_IGN);

  Result<std::string> bin_dir = FindPgBinDir();
  if (!bin_dir.ok()) return StartupFailure(bin_dir.status());
  Result<std::optional<Credentials>> account = ServerAccount();
  if (!account.ok()) return StartupFailure(account.status());
  Result<std::unique_ptr<ShutdownWatch>> watch = ShutdownWatch::Create();
  if (!watch.ok()) return StartupFailure(watch.status());
  // Server processes orphaned by a dying postmaster become our children, so
  // Cluster::Stop can make sure none of them survives.
  if (prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) {
    return StartupFailure(
        Status::Error(std::string("prctl(PR_SET_CHILD_SUBREAPER): ") + std::strerror(errno)));
  }
  Result<std::unique_ptr<TempDir>> dir = TempDir::Create();
  if (!dir.ok()) return StartupFailure(dir.status());
  if (options.value().keep) dir.value()->Keep();

  int exit_code =
      Serve(options.value(), bin_dir.value(), account.value(), *dir.value(), *watch.value());
  if (options.value().keep) {
    Note("kept " + dir.value()->path());
  } else if (Status removed = dir.value()->Remove(); !removed.ok()) {
    Note(removed.message());
    if (exit_code == kExitStopped) exit_code = kExitStartFailed;
  }
  return exit_code;
}

}  // namespace
}  // namespace trellis::testkit

int main(int argc, char** argv) { return trellis::testkit::Run(argc, argv); }
