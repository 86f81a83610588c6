#include "sysv_segment.h"

#include <sys/ipc.h>
#include <sys/shm.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace trellis::testkit {
namespace {

// postmaster.pid lines: pid, data dir, start time, port, socket dir, listen
// address, "shmem key  shmem id", status.
constexpr int kSegmentLine = 7;

// The segment's status if it exists and still carries `segment.key`.
std::optional<shmid_ds> StatSegment(const SysvSegment& segment) {
  shmid_ds status{};
  if (shmctl(segment.id, IPC_STAT, &status) != 0) return std::nullopt;
  if (status.shm_perm.__key != segment.key) return std::nullopt;
  return status;
}

}  // namespace

std::optional<SysvSegment> ReadSysvSegment(const std::string& data_dir) {
  std::ifstream pid_file(std::filesystem::path(data_dir) / "postmaster.pid");
  std::string line;
  for (int number = 1; number <= kSegmentLine; ++number) {
    if (!std::getline(pid_file, line)) return std::nullopt;
  }
  SysvSegment segment;
  std::istringstream fields(line);
  if (!(fields >> segment.key >> segment.id)) return std::nullopt;
  return segment;
}

bool SysvSegmentExists(const SysvSegment& segment) { return StatSegment(segment).has_value(); }

void RemoveOrphanedSysvSegment(const SysvSegment& segment) {
  std::optional<shmid_ds> status = StatSegment(segment);
  if (status && status->shm_nattch == 0) shmctl(segment.id, IPC_RMID, nullptr);
}

}  // namespace trellis::testkit
