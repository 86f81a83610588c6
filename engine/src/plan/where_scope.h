// The user's WHERE asked only of the rows a statement is about
// (spec/engine.md "Charging a failure", "A unit asks the WHERE only of its
// own rows"). SQL leaves the order of a WHERE's conditions to the planner:
// `id <= $2 AND 10 / (d + 1) IS NOT NULL` may divide first, on a row of
// another range, and a failure there would be charged to this unit's keys.
// A CASE is evaluated in order, so the WHERE goes behind one.
#pragma once

#include <string>

namespace trellis::plan {

// `where` (a parenthesised predicate, or "true") evaluated only where
// `condition` holds, false elsewhere.
inline std::string WhereWhen(const std::string& condition, const std::string& where) {
  if (where == "true") return "true";
  if (condition == "true") return where;
  return "CASE WHEN " + condition + " THEN " + where + " ELSE false END";
}

// The rows `rows` selects that pass `where`, asked of those rows only:
// `rows` stays a plain conjunct, so an index still serves it.
inline std::string WhereAmong(const std::string& rows, const std::string& where) {
  if (where == "true") return rows;
  return rows + " AND " + WhereWhen(rows, where);
}

}  // namespace trellis::plan
