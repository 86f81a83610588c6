// The values the plan interfaces (transform_plan.h) speak in: the target
// key, key ranges, rendered statements, and the expression check define
// lends a plan.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pg/connection.h"
#include "trellis/status.h"

namespace trellis::plan {

// One column of the target's key: its name in the target, its type, and the
// expression over the FROM clause that computes it.
struct KeyColumn {
  std::string name;
  std::string type;  // format_type() text, used for casts from text
  std::string expr;  // SQL over the FROM clause's aliases
  // Whether the key may be NULL (a group key may; a primary key may not).
  // Key matching is NULL-safe either way (see KeyEquals in plan_sql.h).
  bool nullable = false;
};

// A key range of the target key, (lo, hi]: each bound a key as a text[]
// literal in key-column order; nullopt is unbounded.
struct KeyRange {
  std::optional<std::string> lo;
  std::optional<std::string> hi;
};

// A rendered statement and the parameters it takes, in order.
struct Bound {
  std::string text;
  pg::Params params;
};

// The dirty-key SQL of one input table: a SELECT over the CTE `consumed`
// (capture rows: id, source_id, op, routing) yielding
// (transform_id int, key text[]) for every unit key the rows may change.
struct DirtyKeys {
  int source_id = 0;
  std::string sql;
};

// One statement of a drain of ledger pages $1 (bigint[]).
struct PagesStatement {
  std::string sql;
  // A query over the same $1 answering one boolean, asked just before the
  // statement in its transaction: false skips the statement, which would
  // change nothing (even an empty recompute costs its planning). Empty:
  // the statement always runs.
  std::string needed;
};

// A statement with a name, for golden tests and docs.
struct NamedStatement {
  std::string name;
  std::string text;
};

// Checks row expressions with PostgreSQL at define time: `exprs` and `where`
// are SQL over the FROM clause `from`; each must parse, type-check and be a
// function of one row of the inputs (no volatile function, aggregate,
// window function or subquery). Returns each expression's type
// (format_type text), or a validation error naming the transform.
// plan/expression_check.h implements it (ExpressionCheckFor).
// Views, not copies: an expression or a WHERE may be a megabyte, and every
// copy counts in the port's peak memory (bench/README.md, "Memory of a
// large statement"). They point into the plan, valid for the call.
using ExpressionCheck = std::function<Result<std::vector<std::string>>(
    std::string_view from, const std::vector<std::string_view>& exprs,
    std::optional<std::string_view> where)>;

}  // namespace trellis::plan
