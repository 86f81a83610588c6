// ALTER of a grouped join (spec/engine.md "Grouping a join"): the group's
// ALTER (group_alter.cc) over a hidden join that carries every column the
// altered statement reads. A column the join lacks is added to it first, in
// the ALTER's one transaction, with a rebuild of that join column; the
// group's rebuild of its new aggregate is requested in the same transaction
// and waits until the join is live again (a waiting transform builds only
// once its upstream is live, catalog/chains.h), so it reads a join target
// whose new column is filled. An error anywhere rolls all of it back.
#pragma once

#include <string>

#include "catalog/model.h"
#include "grammar/ast.h"
#include "pg/connection.h"
#include "trellis/status.h"

namespace trellis::plan {

// Run by a group's ALTER before it locks a catalog row
// (GroupPlan::LockForAlter): when `name` is a grouped join, takes the table locks its ALTER needs
// (tables before the catalog; spec/engine.md "Define", step 3): ACCESS SHARE on every table the
// join reads (the checks read them; a long transaction on one, or its ALTER TABLE, delays this
// ALTER and nothing else), then ACCESS EXCLUSIVE on the hidden join's target and the group's target
// (both may get columns), never waiting for one while holding the other (drains lock them in either
// order). Nothing for any other transform. REQUIRES: inside a transaction.
Status LockGroupedJoinTables(pg::Connection& conn, const std::string& schema,
                             const std::string& name);

// Makes the hidden join of group transform `group` carry every column
// reference of `stmt` (the group's statement as the ALTER makes it): checks
// the grouping over the join as written (errors in the user's terms, nothing
// changed yet), then adds each reference the join target lacks as a join
// column and asks for its rebuild. Nothing to do for a group over no join.
// REQUIRES: inside the ALTER's transaction, `group` locked.
Status CarryJoinColumns(pg::Connection& conn, const std::string& schema,
                        const catalog::Transform& group, const grammar::TransformStmt& stmt);

}  // namespace trellis::plan
