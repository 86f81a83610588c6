// migrate: creates or upgrades the catalog (idempotent, under an advisory
// lock, so it waits while another node migrates). Replies nil.
#include "op_registry.h"

namespace trellis::port {
namespace {

Result<protocol::Value> Migrate(Session& session, const protocol::Map&) {
  Status migrated = session.Migrate();
  if (!migrated.ok()) return migrated;
  return protocol::Value();
}

const OpRegistrar kMigrate(DatabaseOp("migrate", Migrate));

}  // namespace
}  // namespace trellis::port
