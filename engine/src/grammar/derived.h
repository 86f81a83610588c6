// Queries in FROM and WITH queries (spec/grammar.md section 14): which
// table of a statement reads which WITH query. A WITH query is named by an
// unqualified table name written after it (in FROM, a JOIN, a UNION ALL
// branch, a subquery in WHERE, a later WITH query or the query in FROM);
// a name a WITH query takes hides a table of that name, as in SQL. Not
// recursive: a WITH query's own name, or a later one's, inside it is a
// table. The statement reading them is compiled into stages by
// plan/derived_stages.h.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "grammar/ast.h"

namespace trellis::grammar {

// The WITH query `table` names, among the first `visible` of stmt.with.
std::optional<std::size_t> WithQueryNamed(const TransformStmt& stmt, const QualifiedName& table,
                                          std::size_t visible);

// Calls `visit(ref, visible)` for every table `query` reads by name: its
// FROM table (unless it is a query in FROM), joined tables, its WHERE
// subqueries' tables and its UNION ALL branches' tables; `visible` is how
// many of the outer statement's WITH queries it sees.
void ForEachTableRead(TransformStmt& query, std::size_t visible,
                      const std::function<void(TableRef&, std::size_t)>& visit);

// How often each WITH query of `stmt` is read, in the order written.
std::vector<std::size_t> WithReadCounts(const TransformStmt& stmt);

// A WITH query's name as a statement writes it.
std::string RenderWithName(const TransformStmt& query);

}  // namespace trellis::grammar
