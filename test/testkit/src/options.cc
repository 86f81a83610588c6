#include "options.h"

#include <string>
#include <string_view>

namespace trellis::testkit {

Result<Options> ParseOptions(int argc, const char* const* argv, const char* logical_env) {
  Options options;
  if (logical_env != nullptr) {
    const std::string_view value = logical_env;
    if (value == "1") {
      options.logical = true;
    } else if (!value.empty() && value != "0") {
      return Status::Error("TRELLIS_TESTKIT_LOGICAL is '" + std::string(value) +
                           "'; set it to 1 (logical) or 0 (not)");
    }
  }
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--tls") {
      options.tls = true;
    } else if (arg == "--durable") {
      options.durable = true;
    } else if (arg == "--logical") {
      options.logical = true;
    } else if (arg == "--keep") {
      options.keep = true;
    } else if (arg == "--help" || arg == "-h") {
      options.help = true;
    } else {
      return Status::Error("unknown argument '" + std::string(arg) + "'");
    }
  }
  return options;
}

const char* UsageText() {
  return R"(usage: trellis-testkit [--tls] [--durable] [--logical] [--keep] [--help]

Starts a throwaway PostgreSQL cluster, prints its connection URL as the only
line on stdout, and keeps it running until stdin reaches EOF, a SIGTERM,
SIGINT or SIGHUP arrives, or the parent process dies. Then it stops the
server and removes the cluster directory.

  --tls    serve TLS with a throwaway CA; the URL uses host localhost,
           sslmode=verify-full and sslrootcert=<the CA certificate>
  --durable  keep fsync, synchronous_commit and full_page_writes on (for
           benchmarks that must pay what a production commit pays)
  --logical  wal_level = logical, with max_replication_slots and
           max_wal_senders set, for capture by logical decoding; also
           turned on by TRELLIS_TESTKIT_LOGICAL=1 in the environment
  --keep   keep the cluster directory on exit (for debugging)
  --help   print this text

Server binaries: $TRELLIS_PG_BIN if set, else /usr/lib/postgresql/15/bin,
else `pg_config --bindir`. Cluster directory: $TMPDIR (or /tmp)/trellis-testkit-*.
Exit status: 0 after a requested stop, 1 if the cluster could not start or
not be removed, 2 on a command-line error, 3 if the server died on its own.
)";
}

}  // namespace trellis::testkit
