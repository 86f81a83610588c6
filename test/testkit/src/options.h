#pragma once

#include "status.h"

namespace trellis::testkit {

// The testkit's command line, validated once here.
struct Options {
  bool tls = false;      // --tls: serve TLS and print a verify-full URL
  bool keep = false;     // --keep: leave the cluster directory behind on exit
  bool durable = false;  // --durable: keep fsync and synchronous commit on
  bool help = false;     // --help: print usage and exit
};

// Parses argv (argv[0] is the program name). An unknown argument is an error
// whose message names it.
Result<Options> ParseOptions(int argc, const char* const* argv);

// The usage text printed by --help and after a command-line error.
const char* UsageText();

}  // namespace trellis::testkit
