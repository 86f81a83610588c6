// SELECT DISTINCT ON (expr, ...) ... ORDER BY ... (spec/grammar.md section
// 12): one target row per value of the DISTINCT ON expressions, the first
// source row of that value by the ORDER BY. The engine keeps it as a
// grouping by the DISTINCT ON expressions whose other columns are each the
// first row's value, recomputed for every group a change touches
// (DistinctOnAsGrouping): the group-by-key recompute of a GROUP BY
// transform, with no algebraic state.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/ast.h"

namespace trellis::grammar {

// The name of the recomputed call a DISTINCT ON column is kept by: an
// AggregateCall{kRecomputed, name = kFirstByOrder, argument = "(expr) ORDER
// BY keys"} reads the group's first row's `expr` by the keys,
// `(pg_catalog.array_agg(argument))[1]` (FirstByOrderSql). Not a function
// name a user can write: it starts with the engine's hidden prefix.
inline constexpr std::string_view kFirstByOrder = "__trellis_first";

// The SQL of a kFirstByOrder call over `argument` (the text between the
// aggregate's parentheses), with `filter` (a FILTER clause, or empty) on the
// aggregate.
std::string FirstByOrderSql(std::string_view argument, std::string_view filter = {});

// An ORDER BY item without its ASC/DESC, NULLS FIRST/LAST or USING op: the
// expression it sorts by, as written.
std::string OrderKey(std::string_view item);

// True when `a` and `b` are the same tokens (`o.x` and `o . x` are; `x` and
// `o.x` are not).
bool SameTokens(std::string_view a, std::string_view b);

// The column an ORDER BY key names when it is a bare reference to a column
// of the FROM table: `c`, or `q.c` with `q` the FROM table's qualifier.
std::optional<std::string> OrderKeyColumn(std::string_view key, std::string_view qualifier);

// The grouping a GROUP BY plan keeps for a DISTINCT ON statement: GROUP BY
// the DISTINCT ON expressions; each SELECT item that is one of them is a
// key, every other item `e` becomes the kFirstByOrder call of `(e) ORDER BY
// <the ORDER BY items after the DISTINCT ON ones>`, its text that call's
// SQL. DISTINCT ON and ORDER BY are cleared. REQUIRES: stmt.HasDistinctOn().
TransformStmt DistinctOnAsGrouping(const TransformStmt& stmt);

// The refusal (a message naming the fix) of a DISTINCT ON statement whose
// ORDER BY does not pick one row per key: it must name, after the DISTINCT
// ON expressions, every column of the source's key `key_columns` (its
// primary key), so that no two rows tie. nullopt when it does.
std::optional<std::string> DistinctOnTieRefusal(const TransformStmt& stmt,
                                                const std::vector<std::string>& key_columns);

}  // namespace trellis::grammar
