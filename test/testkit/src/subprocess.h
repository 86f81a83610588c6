#pragma once

#include <signal.h>
#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "server_account.h"
#include "shutdown_watch.h"
#include "status.h"

namespace trellis::testkit {

// How to start a child process.
struct SpawnSpec {
  std::vector<std::string> argv;      // argv[0]: absolute path of the executable
  std::string output_path;            // stdout and stderr go here (truncated)
  std::string working_dir;            // the child's cwd (must be accessible to run_as)
  std::optional<Credentials> run_as;  // switch to this account before exec
  int parent_death_signal = SIGKILL;  // sent to the child if this process dies
};

// Starts spec.argv as a direct child with stdin on /dev/null, no other file
// descriptors inherited, default signal mask and dispositions, and
// PR_SET_PDEATHSIG set after the credential switch (which would clear it).
// Returns once exec succeeded; a failure to switch user or exec is returned
// as an error naming the step, with the child already reaped.
Result<pid_t> Spawn(const SpawnSpec& spec);

// Reaps `pid` if it has exited and returns its wait status; nullopt while it
// runs. Never blocks.
std::optional<int> TryReap(pid_t pid);

// "exited with status 1", "was killed by SIGKILL".
std::string DescribeWaitStatus(int wait_status);

// Runs a short-lived tool to completion. A stop request meanwhile kills it
// and returns an aborted status; a non-zero exit returns an error with the
// tail of its output, introduced by `what` (e.g. "initdb").
Status RunToCompletion(const SpawnSpec& spec, const std::string& what, ShutdownWatch& watch);

// Kills and reaps every remaining child of this process, including orphans
// inherited as a child subreaper (e.g. backends of a postmaster that was
// killed). Gives up after a few seconds.
void KillRemainingChildren();

}  // namespace trellis::testkit
