// Queries in FROM and WITH queries (issue 26; spec/grammar.md section 14,
// spec/engine.md "Compiled stages: queries in FROM and WITH"). A statement
// such as
//
//   TRANSFORM big_spenders
//     WITH totals AS (FROM orders o SELECT o.customer_id, sum(o.amount) AS total
//                     GROUP BY o.customer_id)
//     FROM (FROM customers c SELECT c.id, c.name WHERE c.active) AS a
//     JOIN totals t ON a.id = t.customer_id
//     SELECT a.name, t.total WHERE t.total > 100
//
// is compiled into statements the engine already defines:
// - per WITH query, then for the query in FROM, then for each subquery in
//   WHERE with a query of its own (grammar::WhereSubquery::body), a hidden
//   transform `__trellis_derived_<n>` (its target in the catalog schema): the query
//   as written, its reads of earlier WITH queries turned into reads of
//   their hidden targets. It is any statement a TRANSFORM may be (a
//   projection, join, grouping, grouped join, with HAVING, subqueries in
//   WHERE, DISTINCT aggregates), compiled as such.
// - the user's statement, each table naming a WITH query (and the query in
//   FROM) turned into the hidden target, under the name the statement reads
//   it by (its alias, else the WITH query's name), so every expression
//   reads as written. A WITH query read twice is one hidden target read
//   twice (a self join, or a join and a subquery).
// Pure functions: the define half is derived_stages_define.h.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "grammar/ast.h"

namespace trellis::plan {

// The prefix of a hidden query's name; the rest is a number no transform
// has had.
inline constexpr std::string_view kHiddenDerivedPrefix = "__trellis_derived_";

// How many hidden queries `stmt` compiles into: one per WITH query, one
// for the query in FROM and one per subquery body.
std::size_t DerivedPartsNeeded(const grammar::TransformStmt& stmt);

struct DerivedStages {
  // One per WITH query in order, then the query in FROM: each a statement
  // whose target is its hidden name.
  std::vector<grammar::TransformStmt> queries;
  // What each reads as in a message: "the WITH query totals", "the query in
  // FROM (AS a)".
  std::vector<std::string> words;
  // The user's statement over the hidden targets, without WITH or a query
  // in FROM.
  grammar::TransformStmt owner;
};

// Compiles `stmt` (REQUIRES: stmt.HasDerived()) over `hidden`
// (DerivedPartsNeeded names, in the order of DerivedStages::queries).
DerivedStages CompileDerivedStages(const grammar::TransformStmt& stmt,
                                   const std::vector<grammar::QualifiedName>& hidden);

}  // namespace trellis::plan
