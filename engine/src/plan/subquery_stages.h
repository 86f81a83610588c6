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
//                     missing joined row reads);
//     x NOT IN (...)  two groupings, LEFT JOINed: the matches (keyed as IN)
//                     and the totals (keyed by the correlations alone:
//                     count(*) and count(value)), and SQL's rule: true iff
//                     no rows, or x is not NULL, matches nothing, and no
//                     value selected is NULL.
//     EXISTS / NOT EXISTS correlated by equalities and one `inner <> q.c`
//                     (TPC-H Q21): two keyed counts, LEFT JOINed (EXISTS
//                     joins the first INNER): the rows matching the
//                     equalities whose `inner` is not NULL, and of those the
//                     rows whose `inner` also equals q.c (keyed by it too).
//                     The subquery has rows iff the first count exceeds the
//                     second, and q.c is not NULL (`<>` never matches NULL):
//                     EXISTS `q.c IS NOT NULL AND n1 > n2`, NOT EXISTS
//                     `q.c IS NULL OR n1 = n2`, each count read as
//                     coalesce(.., 0). Counts subtract, so no wider grouping
//                     (by every value of `inner`) is needed.
// A grouping with no correlation holds one row for its whole table; the
// join plans join on column equalities only, so the statement then reads a
// hidden copy of its FROM table (`__trellis_rows_<n>`) with a constant
// `true` column, joined to the grouping's constant key.
// The rewrite works on the spans the grammar found (grammar/subquery.h),
// never on raw text. Pure functions: the define half is
// subquery_stages_define.h.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/ast.h"
#include "trellis/status.h"

namespace trellis::plan {

// The prefix of a hidden subquery grouping's name; the rest is a number no
// transform has had.
inline constexpr std::string_view kHiddenSubqueryPrefix = "__trellis_sub_";

// The prefix of the FROM table's hidden copy (NeedsFromCopy).
inline constexpr std::string_view kHiddenFromCopyPrefix = "__trellis_rows_";

// The alias the statement joins the `k`-th (from 1) subquery's target by.
std::string SubqueryAlias(std::size_t k);

// The hidden grouping's columns: the `i`-th (from 1) correlation's, the
// `k`-th distinct aggregate call's (a comparison), and count(*)'s (EXISTS,
// NOT EXISTS, IN). Plain names: the grouping holds nothing else, and only
// Trellis reads it.
std::string CorrelationColumnName(std::size_t i);
std::string SubqueryAggregateName(std::size_t k);
inline constexpr std::string_view kSubqueryCountColumn = "n";
// NOT IN's totals: count(value), the values selected that are not NULL.
inline constexpr std::string_view kSubqueryValuesColumn = "v";

// The column a FROM table's copy holds `true` in, for a join to a
// one-row (whole-table) grouping: the join plans join on column equalities
// only, and the grouping's key column, kWholeTableKey, is `true`.
inline constexpr std::string_view kConstantKeyColumn = "trellis_one";

// True when a subquery of `stmt` needs a grouping over its whole table (an
// uncorrelated EXISTS, NOT EXISTS or comparison; NOT IN's totals when it is
// not otherwise correlated), joined to a copy of the FROM table with a
// constant column.
bool NeedsFromCopy(const grammar::TransformStmt& stmt);

// How many hidden parts `stmt` compiles into: a grouping per subquery, two
// for NOT IN (its matches and its totals), and the FROM table's copy when
// NeedsFromCopy.
std::size_t HiddenPartsNeeded(const grammar::TransformStmt& stmt);

// What a statement with subqueries becomes.
struct SubqueryStages {
  // The copy of the FROM table (every column of `from_columns` under its
  // own name, and `true AS trellis_one`), when NeedsFromCopy.
  std::optional<grammar::TransformStmt> from_copy;
  std::vector<grammar::TransformStmt> stages;  // the groupings, in order
  std::vector<std::size_t> stage_subquery;     // the subquery each comes from
  grammar::TransformStmt owner;                // the user's statement over them
};

// Compiles `stmt` (REQUIRES: stmt.HasSubqueries()) over the hidden parts
// `hidden` (HiddenPartsNeeded of them: the groupings in order, then the
// FROM table's copy). `from_columns` are the FROM table's columns, needed
// only for the copy.
Result<SubqueryStages> CompileSubqueryStages(const grammar::TransformStmt& stmt,
                                             const std::vector<grammar::QualifiedName>& hidden,
                                             const std::vector<std::string>& from_columns = {});

}  // namespace trellis::plan
