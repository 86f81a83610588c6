#include "cluster_facts.h"

#include <sys/ipc.h>
#include <sys/shm.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "proc_scan.h"

namespace trellis::testkit::test {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using std::chrono::steady_clock;

namespace {

// postmaster.pid lines: 1 pid, 2 data directory, ..., 7 "shmem key  shmem id".
constexpr int kPidLine = 1;
constexpr int kSegmentLine = 7;
constexpr milliseconds kPollInterval{50};

bool SegmentExists(key_t key, int id) {
  shmid_ds status{};
  return shmctl(id, IPC_STAT, &status) == 0 && status.shm_perm.__key == key;
}

}  // namespace

std::optional<ClusterFacts> InspectCluster(PgClient& client, std::string* error) {
  std::optional<std::string> data_dir = client.Scalar("SHOW data_directory");
  std::optional<std::vector<std::string>> pids = client.Column("SELECT pid FROM pg_stat_activity");
  if (!data_dir || !pids) {
    *error = client.error();
    return std::nullopt;
  }
  ClusterFacts facts;
  facts.root_dir = fs::path(*data_dir).parent_path().string();
  for (const std::string& pid : *pids) facts.server_pids.push_back(std::stoi(pid));

  std::ifstream pid_file(fs::path(*data_dir) / "postmaster.pid");
  std::vector<std::string> lines;
  for (std::string line; std::getline(pid_file, line);) lines.push_back(line);
  std::istringstream segment(lines.size() >= kSegmentLine ? lines[kSegmentLine - 1] : "");
  if (lines.size() < kSegmentLine || !(segment >> facts.segment_key >> facts.segment_id)) {
    *error = "cannot read the postmaster pid and shared memory from postmaster.pid in " + *data_dir;
    return std::nullopt;
  }
  facts.server_pids.push_back(std::stoi(lines[kPidLine - 1]));
  return facts;
}

std::string Leftovers(const ClusterFacts& facts) {
  std::string found;
  std::error_code ec;
  if (fs::exists(facts.root_dir, ec)) found += "directory " + facts.root_dir + " exists; ";
  for (pid_t pid : facts.server_pids) {
    if (IsRunning(pid)) found += "server process " + std::to_string(pid) + " runs; ";
  }
  for (pid_t pid : ProcessesMentioning(facts.root_dir)) {
    found += "process " + std::to_string(pid) + " mentions the directory; ";
  }
  if (SegmentExists(facts.segment_key, facts.segment_id)) {
    found += "shared memory segment " + std::to_string(facts.segment_id) + " remains; ";
  }
  return found;
}

bool AwaitServerGone(const ClusterFacts& facts, milliseconds timeout) {
  const auto deadline = steady_clock::now() + timeout;
  for (;;) {
    bool running = false;
    for (pid_t pid : facts.server_pids) running = running || IsRunning(pid);
    if (!running) return true;
    if (steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(kPollInterval);
  }
}

std::string AwaitNoLeftovers(const ClusterFacts& facts, milliseconds timeout) {
  const auto deadline = steady_clock::now() + timeout;
  std::string found = Leftovers(facts);
  while (!found.empty() && steady_clock::now() < deadline) {
    std::this_thread::sleep_for(kPollInterval);
    found = Leftovers(facts);
  }
  return found;
}

}  // namespace trellis::testkit::test
