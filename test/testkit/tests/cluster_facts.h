#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "pg_client.h"

namespace trellis::testkit::test {

// What a test needs to know to check later that a cluster left nothing behind.
struct ClusterFacts {
  std::string root_dir;            // the testkit's directory (parent of the data directory)
  std::vector<pid_t> server_pids;  // the postmaster and every process in pg_stat_activity
  key_t segment_key = 0;           // the postmaster's System V segment (postmaster.pid line 7)
  int segment_id = -1;
};

// Reads the facts through `client`, connected to the cluster; the postmaster
// pid and its shared memory segment come from the data directory's
// postmaster.pid file. nullopt with
// *error set on failure.
std::optional<ClusterFacts> InspectCluster(PgClient& client, std::string* error);

// Describes what of the cluster still exists: its directory, a server
// process still running, any process whose command line mentions the
// directory, or its System V shared memory segment. Empty when nothing remains.
std::string Leftovers(const ClusterFacts& facts);

// Polls until no server process of the cluster runs; false on timeout.
bool AwaitServerGone(const ClusterFacts& facts, std::chrono::milliseconds timeout);

// Polls Leftovers() until it is empty or `timeout` passes; returns the last
// description (empty: the cluster is gone).
std::string AwaitNoLeftovers(const ClusterFacts& facts, std::chrono::milliseconds timeout);

}  // namespace trellis::testkit::test
