// UNION ALL of queries into one target (issue 26; spec/grammar.md section
// 13, spec/engine.md "Compiled stages: UNION ALL"). A statement such as
//
//   TRANSFORM contacts FROM customers c SELECT c.name, c.email WHERE c.active
//     UNION ALL FROM suppliers s SELECT s.name, s.email
//
// is compiled into statements of kinds the engine maintains:
// - per branch, a hidden projection or join (`__trellis_union_<n>`, its
//   target in the catalog schema): the branch as written, plus a column
//   `trellis_u` that names its row across every branch, the branch's number
//   and its row's key as text: `'<b>:' || (ROW(<the key columns of every
//   input of the branch>))::text`. The keys of all its inputs tell a
//   projection's or a join's rows apart, so the text is unique per row.
// - FULL JOINs of the branches' targets ON trellis_u = trellis_u, stacked
//   left to right (a FULL JOIN may only be a statement's first join): two
//   branches never share a trellis_u, so nothing matches and every row of
//   every branch is one row of the stack, its columns read from the side
//   that holds it. The last stack is the user's transform. A FULL JOIN's
//   unit is its join value, here the row's trellis_u, so a change of one
//   branch's row recomputes that one row of the target and no other.
// Pure functions: the define half is union_all_stages_define.h.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "grammar/ast.h"
#include "trellis/status.h"

namespace trellis::plan {

// The prefix of a hidden branch's, or an inner stack's, name; the rest is a
// number no transform has had.
inline constexpr std::string_view kHiddenUnionPrefix = "__trellis_union_";

// The stack's aliases for its two sides.
inline constexpr std::string_view kUnionLeftAlias = "trellis_l";
inline constexpr std::string_view kUnionRightAlias = "trellis_r";

// The column naming a row across the branches: `trellis_u`, with as many
// `_` after it as it takes for no SELECT item's name to start as it does.
std::string UnionRowColumn(const grammar::TransformStmt& stmt);

// How many hidden parts `stmt` (REQUIRES: HasUnionAll) compiles into: one
// per branch, and every stack but the last (the user's transform).
std::size_t UnionPartsNeeded(const grammar::TransformStmt& stmt);

// The `b`-th branch (from 0, the statement's own query first) as a
// statement without a target.
const grammar::TransformStmt& UnionBranch(const grammar::TransformStmt& stmt, std::size_t b);
std::size_t UnionBranchCount(const grammar::TransformStmt& stmt);

struct UnionAllStages {
  std::vector<grammar::TransformStmt> branches;  // one per branch, in order
  std::vector<grammar::TransformStmt> stacks;    // the stacks but the last
  grammar::TransformStmt owner;                  // the last stack, the user's target
};

// Compiles `stmt` over `hidden` (UnionPartsNeeded names: the branches', then
// the inner stacks'). `keys[b]` are branch b's row key columns, each written
// `qualifier.column` (quoted) of an input of the branch, every input's key
// in the order the branch names its inputs.
Result<UnionAllStages> CompileUnionAllStages(const grammar::TransformStmt& stmt,
                                             const std::vector<grammar::QualifiedName>& hidden,
                                             const std::vector<std::vector<std::string>>& keys);

}  // namespace trellis::plan
