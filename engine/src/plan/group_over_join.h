// GROUP BY over a join (issue 12; spec/engine.md "Joins", "Grouping a
// join"). A grouping statement whose FROM has JOINs runs as two catalog
// transforms: a hidden join transform, whose target (in the catalog schema)
// holds, per FROM row the joins and the WHERE keep, every column the
// grouping reads; and the user's group transform, which groups that target.
// A group key over joined columns needs the OLD group of a row whose join
// path changed (a customer moving region while the region is renamed); the
// join target's rows are exactly that old state, so the group plan stays the
// plain one over a table.
//
// These pure functions turn the user's statement into the two statements.
// The user's text stays the group transform's stored definition; the group
// plan rewrites it again each time it binds (the rewrite depends only on
// the statement and the hidden target's name, which is its FROM input).
#pragma once

#include <string>
#include <vector>

#include "grammar/ast.h"

namespace trellis::plan {

// The prefix of a hidden join transform's name (its target lives in the
// catalog schema); the rest is a number no transform has had.
inline constexpr std::string_view kHiddenJoinPrefix = "__trellis_join_";

// One column the grouping reads: `qualifier.column` as written.
struct JoinColumnRef {
  std::string qualifier;
  std::string column;
  bool operator==(const JoinColumnRef&) const = default;
};

// The hidden target's column holding `ref`: "qualifier.column" when that fits
// in 63 bytes, else a UTF-8-safe prefix of it, '~' and 16 hex digits of a
// hash of both parts, so that two references never share a column at any
// name length.
std::string HiddenColumnName(const JoinColumnRef& ref);

// Every `qualifier.column` reference to a table of `stmt` in its SELECT items
// and GROUP BY expressions (the WHERE runs in the join), each once, in the
// order first written.
std::vector<JoinColumnRef> GroupingColumnRefs(const grammar::TransformStmt& stmt);

// The hidden join's SELECT item carrying `ref`: `"qualifier"."column"`,
// named HiddenColumnName(ref). Define selects one per reference; an ALTER
// whose aggregate reads a reference the join does not carry adds one.
grammar::SelectItem HiddenJoinItem(const JoinColumnRef& ref);

// The hidden join transform of grouping statement `stmt`: `stmt`'s FROM,
// joins and WHERE, selecting one column per GroupingColumnRefs entry (named
// by HiddenColumnName), targeting `hidden`.
grammar::TransformStmt HiddenJoinStatement(const grammar::TransformStmt& stmt,
                                           const grammar::QualifiedName& hidden);

// The grouping of `stmt` over the hidden target `hidden`, aliased as
// `stmt`'s FROM table: every reference rewritten to the hidden column, the
// output names kept, no joins and no WHERE (the join applied both).
// Identity for a statement without joins or subqueries.
grammar::TransformStmt GroupOverHidden(const grammar::TransformStmt& stmt,
                                       const grammar::QualifiedName& hidden);

// The grouping of `stmt` over its join as one query over the base tables:
// what a grouped join's target must equal, which self-check compares it
// with (end to end, not only against the hidden join's target). Selects,
// in order, each of `columns` (target column names): the SELECT item of
// that name, or `true` for `whole_table_key` (the hidden key of aggregates
// over the whole table).
std::string DefinitionOverJoinSql(const grammar::TransformStmt& stmt,
                                  const std::vector<std::string>& columns,
                                  std::string_view whole_table_key);

}  // namespace trellis::plan
