#include "server_account.h"

#include <pwd.h>
#include <unistd.h>

namespace trellis::testkit {

Result<std::optional<Credentials>> ServerAccount() {
  if (geteuid() != 0) return std::optional<Credentials>();
  const passwd* entry = getpwnam("postgres");
  if (entry == nullptr) {
    return Status::Error(
        "running as root needs a 'postgres' system user to run the server as "
        "(the postgresql package creates it)");
  }
  return std::optional<Credentials>(Credentials{entry->pw_uid, entry->pw_gid, entry->pw_name});
}

}  // namespace trellis::testkit
