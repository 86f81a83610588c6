// Define of a GROUP BY over a join (spec/engine.md "Grouping a join"): two
// catalog transforms in define's one transaction, a hidden join transform
// (named __trellis_join_<n>, its target in the catalog schema) carrying the
// columns the grouping reads, and the user's group transform over that
// target (plan/group_over_join.h). A refusal of either creates nothing.
#pragma once

#include <string>

#include "catalog/model.h"
#include "grammar/ast.h"
#include "pg/connection.h"
#include "trellis/status.h"

namespace trellis::statements {

// Refuses a target a hidden part could be mistaken for: one in the catalog
// schema, or a name starting with __trellis_ (Trellis's own names).
Status RefuseReservedTarget(const std::string& schema, const grammar::QualifiedName& target);

// Defines grouping statement `stmt` (it has JOINs) inside the caller's
// transaction, which define has begun and commits.
Status DefineGroupOverJoin(pg::Connection& conn, const std::string& schema,
                           const grammar::TransformStmt& stmt);

// ALTER of grouped join `t` to statement `stmt`: refuses (validation) a
// column reference the hidden join target does not carry. Adding one would
// change the join under a live transform; the message says to define the
// transform again. OK for a transform over no join.
Status CheckJoinColumnsCarried(pg::Connection& conn, const catalog::Transform& t,
                               const grammar::TransformStmt& stmt);

}  // namespace trellis::statements
