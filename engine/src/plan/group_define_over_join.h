// Define of a GROUP BY over a join (spec/engine.md "Grouping a join"): two
// catalog transforms in define's one transaction, a hidden join transform
// (named __trellis_join_<n>, its target in the catalog schema) carrying the
// columns the grouping reads, and the user's group transform over that
// target (group_over_join.h). A refusal of either creates nothing. Define
// reaches it through DefineStatement (define_statement.h); the group's
// ALTER (group_alter_over_join.h) through CheckGroupingOverJoin.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "catalog/model.h"
#include "grammar/ast.h"
#include "pg/connection.h"
#include "plan/define_statement.h"
#include "trellis/status.h"

namespace trellis::plan {

// Defines grouping statement `stmt` (it has JOINs) inside the caller's
// transaction, which define has begun and commits, each part through
// `steps`.
Status DefineGroupOverJoin(pg::Connection& conn, const std::string& schema,
                           const grammar::TransformStmt& stmt, const DefineSteps& steps);

// The grouping of `stmt` checked over the join of hidden join transform
// `join_id` as written (the grouped query, then every per-row expression),
// so that an error names what the user wrote. Define and ALTER run it before
// anything over the hidden target.
Status CheckGroupingOverJoin(pg::Connection& conn, const std::string& schema, int join_id,
                             const grammar::TransformStmt& stmt);

// A refusal of hidden part `hidden` in the user's terms: the hidden target
// reads `reads_as` ("the join"), the hidden transform's name `user_name`.
// OK stays OK.
// `status` with its message replaced, its code and diagnostics kept (a
// refusal of a hidden part, reworded in the user's terms).
Status WithMessage(const Status& status, std::string message);

Status InUserTerms(const Status& status, const grammar::QualifiedName& hidden,
                   const std::string& user_name, std::string_view reads_as = "the join");

// A fresh name for a hidden part, `prefix` and a number the transforms' id
// sequence hands out once (never again, even after a rollback), in the
// catalog schema: it fits in 63 bytes whatever the user's name and never
// carries the user's bytes.
Result<grammar::QualifiedName> HiddenName(pg::Connection& conn, const std::string& schema,
                                          std::string_view prefix);

// Creates, on Trellis's own hidden targets, the indexes the maintenance of
// transforms `ids` wants and lacks (their source index gaps on tables in
// the catalog schema; a gap on a user's table is the user's): a hidden
// target is looked up by the columns the stage reading it joins on, and
// only Trellis can index it. Without CONCURRENTLY: the table is new in this
// transaction and no one else can see it.
Status IndexHiddenInputs(pg::Connection& conn, const std::string& schema,
                         const std::vector<int>& ids);

// A refusal of the grouping over hidden target `hidden`, met after the
// checks over the join passed: in the user's terms (InUserTerms), a
// validation error saying to write every column as table.column (the usual
// cause: a column the rewrite onto the hidden target could not see).
Status GroupingRefusal(const Status& status, const grammar::QualifiedName& hidden,
                       const std::string& user_name);

}  // namespace trellis::plan
