#pragma once

#include "status.h"

namespace trellis::testkit {

// The testkit's command line, validated once here.
struct Options {
  bool tls = false;      // --tls: serve TLS and print a verify-full URL
  bool keep = false;     // --keep: leave the cluster directory behind on exit
  bool durable = false;  // --durable: keep fsync and synchronous commit on
  // --logical, or TRELLIS_TESTKIT_LOGICAL=1: wal_level = logical, with room
  // for replication slots and WAL senders (capture by logical decoding)
  bool logical = false;
  bool help = false;  // --help: print usage and exit
};

// Parses argv (argv[0] is the program name). An unknown argument is an error
// whose message names it. `logical_env` is $TRELLIS_TESTKIT_LOGICAL (null
// when unset): "1" turns on --logical, so a whole suite's clusters can be
// made logical without touching each caller; "0" or "" leaves it off, and
// any other value is an error naming it.
Result<Options> ParseOptions(int argc, const char* const* argv, const char* logical_env);

// The usage text printed by --help and after a command-line error.
const char* UsageText();

}  // namespace trellis::testkit
