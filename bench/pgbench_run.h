// Runs PostgreSQL's pgbench as a child with a custom script and reads its
// summary. pgbench's own client loop is cheaper and steadier than anything
// we could write, and -R gives a paced (Poisson) schedule for free.
#pragma once

#include <optional>
#include <string>

namespace trellis::bench {

struct PgbenchRun {
  std::string binary;  // path to pgbench
  std::string url;     // database to run against
  std::string script;  // the custom script's text
  int clients = 1;
  int seconds = 5;
  std::optional<int> rate;  // -R: transactions per second, all clients together
};

struct PgbenchResult {
  double tps = 0;         // "without initial connection time"
  double latency_ms = 0;  // average
  long transactions = 0;
  std::string output;  // everything pgbench printed
};

// Throws BenchError when pgbench fails or prints no tps line.
PgbenchResult RunPgbench(const PgbenchRun& run);

}  // namespace trellis::bench
