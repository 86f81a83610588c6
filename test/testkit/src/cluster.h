#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

#include "server_account.h"
#include "shutdown_watch.h"
#include "status.h"
#include "sysv_segment.h"
#include "tls_files.h"

namespace trellis::testkit {

// Where and how to run one cluster.
struct ClusterConfig {
  std::string bin_dir;                // holds initdb and postgres
  std::string root_dir;               // the cluster's private directory (see TempDir)
  std::optional<Credentials> run_as;  // account for initdb and postgres; nullopt: ours
  std::optional<TlsFiles> tls;        // serve TLS with these files
  bool durable = false;               // leave durability on
  bool logical = false;               // wal_level = logical, slots and WAL senders
};

// One throwaway PostgreSQL cluster under root_dir: data in root_dir/data,
// the unix socket in root_dir, logs in root_dir/initdb.log and
// root_dir/postgres.log. The postmaster is a direct child of this process
// and dies with it (PR_SET_PDEATHSIG SIGQUIT: an immediate shutdown).
// Thread-safety: not thread-safe. Destruction stops a running server.
class Cluster {
 public:
  explicit Cluster(ClusterConfig config);
  ~Cluster();
  Cluster(const Cluster&) = delete;
  Cluster& operator=(const Cluster&) = delete;

  // Runs initdb (trust authentication, user postgres, UTF8, C locale).
  // REQUIRES: root_dir is writable by the run_as account.
  Status Init(ShutdownWatch& watch);

  // Starts the postmaster on a free port of 127.0.0.1 and returns once url()
  // accepted a connection that reached this cluster. Retries with another
  // port if one was taken between picking and binding it.
  // REQUIRES: Init() succeeded.
  Status Start(ShutdownWatch& watch);

  // The connection URL; valid after Start() succeeded.
  const std::string& url() const { return url_; }
  pid_t postmaster_pid() const { return postmaster_; }

  // Stops the postmaster with `shutdown_signal` (SIGINT: fast, SIGQUIT:
  // immediate) and starts it again on the same port, so url() stays valid;
  // returns once it accepts connections. Sessions open before see the server
  // close them, as after `pg_ctl restart`.
  // REQUIRES: Start() succeeded.
  Status Restart(int shutdown_signal, ShutdownWatch& watch);

  // If the postmaster has exited since Start(), reaps it and describes how.
  std::optional<std::string> CheckExited();

  // Fast shutdown (SIGINT), escalating to SIGQUIT after 10 s and SIGKILL
  // after 5 s more; then kills and reaps any orphaned server processes and
  // removes the shared memory segment a killed postmaster leaves behind.
  // Idempotent.
  void Stop();

  // The end of the server log, for error reports.
  std::string LogTail() const;

 private:
  enum class Attempt { kReady, kPortTaken, kFailed };

  Attempt StartOnPort(int port, ShutdownWatch& watch, Status* status);
  Status VerifyUrl(bool* other_cluster) const;
  std::string MakeUrl(int port) const;

  const ClusterConfig config_;
  const std::string data_dir_;
  const std::string log_path_;
  pid_t postmaster_ = -1;
  int port_ = -1;
  std::optional<SysvSegment> segment_;
  std::string url_;
};

}  // namespace trellis::testkit
