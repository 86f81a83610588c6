#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

namespace trellis::testkit {

// The small System V shared memory segment a PostgreSQL postmaster keeps as
// an interlock, as recorded on line 7 of its postmaster.pid ("key id").
// A postmaster that shuts down removes it; one that is killed leaves it
// behind, owned by nobody, until reboot.
struct SysvSegment {
  key_t key = 0;
  int id = -1;
};

// Reads the segment from data_dir/postmaster.pid; nullopt if not recorded.
std::optional<SysvSegment> ReadSysvSegment(const std::string& data_dir);

// True if the segment still exists with the same key.
bool SysvSegmentExists(const SysvSegment& segment);

// Removes the segment if it still exists with the same key and no process
// is attached to it. REQUIRES: the cluster's processes are gone.
void RemoveOrphanedSysvSegment(const SysvSegment& segment);

}  // namespace trellis::testkit
