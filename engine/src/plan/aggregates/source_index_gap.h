// Source index gaps (issue 11): maintaining a group reads the group's source
// rows by its GROUP BY values, which needs an index on them; without one
// every group recompute is a sequential scan of the source. These render
// the fix a user runs and the probe that says whether the gap is open.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace trellis::plan::aggregates {

struct GroupingExpression {
  std::string expr;  // the GROUP BY expression as written, over the source's alias
  std::string type;  // its type, format_type() text
};

// What an index must cover to close the gap, in order: a bare column
// reference becomes the column (quoted), any other expression is bracketed,
// with the source's qualifier (`alias.`) taken out, since an index
// expression names columns bare.
std::vector<std::string> IndexParts(const std::string& alias,
                                    const std::vector<GroupingExpression>& keys);

// `CREATE INDEX CONCURRENTLY ON <source> (<columns or (expressions)>)`, ready
// to run: CONCURRENTLY because the source is live and a plain CREATE INDEX
// blocks its writers for the whole build. A bare column reference becomes the
// column; any other expression is bracketed, with the source's qualifier
// (`alias.`) taken out, since an index expression names columns bare.
// `source` is quoted and qualified; `alias` unquoted.
std::string IndexFixSql(const std::string& source, const std::string& alias,
                        const std::vector<GroupingExpression>& keys);

// An EXPLAIN (FORMAT JSON) of looking up one group's rows, to run with
// sequential scans disabled (SET LOCAL enable_seqscan = off): the gap is
// closed when the plan reads the source through an index condition
// ("Index Cond" or "Recheck Cond" in the plan), which an index whose leading
// column is a group column, or an expression index on a grouped expression,
// gives. The planner decides, so any index it can use for the lookup counts,
// whatever its name or column order.
std::string GroupLookupProbeSql(const std::string& source, const std::string& alias,
                                const std::vector<GroupingExpression>& keys);

// The column `expr` names when it is one column of the source, bare or
// qualified by `alias` and in any number of parentheses, as the server
// stores it (unquoted names folded to lower case); nullopt for any other
// expression.
std::optional<std::string> ColumnName(const std::string& expr, const std::string& alias);

// SQL true when `source` (quoted, qualified) has a valid index whose leading
// columns are `columns`, in order (names as ColumnName gives them).
std::string HasIndexOnSql(const std::string& source, const std::vector<std::string>& columns);

// True when `explain_json` (the probe's output) reads the source through an
// index condition.
bool ProbeUsesIndex(const std::string& explain_json);

}  // namespace trellis::plan::aggregates
