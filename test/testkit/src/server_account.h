#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

#include "status.h"

namespace trellis::testkit {

// The unprivileged account a child process switches to before exec.
struct Credentials {
  uid_t uid = 0;
  gid_t gid = 0;
  std::string user;
};

// Returns the account initdb and postgres must run as. PostgreSQL refuses to
// run as root, so when this process is root that is the `postgres` system
// user (created by the Debian postgresql package); otherwise nullopt, meaning
// the servers run as the current user.
Result<std::optional<Credentials>> ServerAccount();

}  // namespace trellis::testkit
