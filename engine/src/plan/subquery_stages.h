// Subqueries in WHERE (issue 26; spec/engine.md "Compiled stages:
// subqueries in WHERE"). A statement such as
//
//   TRANSFORM open_orders FROM orders o SELECT o.id, o.total
//     WHERE o.total > 0 AND EXISTS (SELECT 1 FROM lineitem l
//                                   WHERE l.order_id = o.id AND l.shipped IS NULL)
//
// is compiled into statements of kinds the engine maintains:
// - per subquery, a hidden grouping (`__trellis_sub_<n>`, its target in the
//   catalog schema) over the subquery's table, its local conditions as its
//   WHERE, grouped by its correlation columns (the inner sides of its
//   equalities, and for IN the value selected, as `k<i>`; rows where one
//   is NULL left out, since `=` never matches NULL), holding count(*) as
//   `n`, or for a comparison each distinct aggregate call as `a<k>`;
// - the user's statement, with each hidden target joined on the
//   correlation equalities (the target is unique on them: a many-to-one
//   join) and each subquery's condition replaced by a predicate over the
//   joined columns:
//     EXISTS, IN      INNER JOIN, the condition `true`;
//     NOT EXISTS      LEFT JOIN, `h.n IS NULL` (an anti-join);
//     x op (SELECT f) LEFT JOIN, `x op f'` with each call read from its
//                     column (count from coalesce(.., 0): no rows count 0,
//                     while the other aggregates of no rows are NULL, as a
//                     missing joined row reads).
// The rewrite works on the spans the grammar found (grammar/subquery.h),
// never on raw text. Pure functions: the define half is
// subquery_stages_define.h.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "grammar/ast.h"
#include "trellis/status.h"

namespace trellis::plan {

// The prefix of a hidden subquery grouping's name; the rest is a number no
// transform has had.
inline constexpr std::string_view kHiddenSubqueryPrefix = "__trellis_sub_";

// The alias the statement joins the `k`-th (from 1) subquery's target by.
std::string SubqueryAlias(std::size_t k);

// The hidden grouping's columns: the `i`-th (from 1) correlation's, the
// `k`-th distinct aggregate call's (a comparison), and count(*)'s (EXISTS,
// NOT EXISTS, IN). Plain names: the grouping holds nothing else, and only
// Trellis reads it.
std::string CorrelationColumnName(std::size_t i);
std::string SubqueryAggregateName(std::size_t k);
inline constexpr std::string_view kSubqueryCountColumn = "n";

// What a statement with subqueries becomes.
struct SubqueryStages {
  std::vector<grammar::TransformStmt> stages;  // per subquery, targeting hidden[k]
  grammar::TransformStmt owner;                // the user's statement over them
};

// Compiles `stmt` (REQUIRES: stmt.HasSubqueries()) over the hidden
// groupings `hidden`, one per subquery in order.
Result<SubqueryStages> CompileSubqueryStages(const grammar::TransformStmt& stmt,
                                             const std::vector<grammar::QualifiedName>& hidden);

}  // namespace trellis::plan
