#include "workers/locks.h"

namespace trellis::workers {

// $1 is always the catalog schema name in the statements that use these.
std::string StagingLockSpace() { return "hashtext('trellis.staging:' || $1)"; }
std::string TransformLockSpace() { return "hashtext('trellis.transform:' || $1)"; }
std::string BucketLockSpace() { return "hashtext('trellis.bucket:' || $1)"; }

}  // namespace trellis::workers
