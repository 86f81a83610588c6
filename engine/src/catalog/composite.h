// A transform as its user knows it: the transform they named (the owner)
// and the stages it runs as (spec/engine.md "Stages"). A stage is a
// transform of an existing kind whose catalog row names its owner
// (transforms.owner_id, catalog step 15) and its place (stage_order): the
// hidden join under a grouped join is one. Every statement and read that
// acts on "the transform" (status, PAUSE/RESUME, DROP, request_backfill,
// ALTER's carried columns) loads the composite and acts on each part, so a
// transform of three stages needs no code of its own there.
#pragma once

#include <string>
#include <vector>

#include "catalog/model.h"
#include "pg/connection.h"
#include "trellis/status.h"

namespace trellis::catalog {

struct Composite {
  Transform owner;
  // In stage order: each reads sources or the stages before it, and the
  // owner reads the last. Empty for a transform of one stage (most).
  std::vector<Transform> stages;

  // The first stage, the one a build runs first; the owner when there is
  // no stage.
  const Transform& first() const { return stages.empty() ? owner : stages.front(); }
};

// The composite `owner` heads. With `lock`, each stage's row FOR UPDATE, in
// stage order, after the owner's (which the caller loaded, and locked when
// it asks for a lock: the one order every statement takes them in).
[[nodiscard]] Result<Composite> LoadComposite(pg::Connection& conn, const std::string& schema,
                                              Transform owner, bool lock = false);

}  // namespace trellis::catalog
