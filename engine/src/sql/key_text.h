// The text form of a key, defined once (spec/engine.md "Unit keys"). A key
// (a unit key: what one unit of maintenance recomputes; for today's kinds
// the target's row key) travels between the engine's statements and tables
// as a one-dimensional text[] of its values in key-column order, each value
// its type's text output (`value::text`), a NULL value a NULL element. Pages
// hold it (a page's keys are a 2-D text[], one key per row), and so do
// held_keys, quarantined_rows, delta_rows and self-check's candidates;
// `hashtext(key::text)` buckets it. Every reader and writer of that form
// goes through this file: the SQL that renders a key's text form and casts
// it back to the key's types, and the C++ side that writes and reads a key
// literal (PostgreSQL's text output of the text[]: `{1,NULL,"a b"}`).
//
// Two keys are the same exactly when their text forms are equal: a type
// whose equal values print differently (numeric 1.0 and 1.00) is
// canonicalized through the type first (CanonicalKeySql's cast back and
// forth, session_quarantine.cc).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace trellis::sql {

// ---- SQL ----

// The text form of a key computed by `value_exprs`: ARRAY[e1::text, ...].
// An expression that is not a plain name is bracketed by the caller, so the
// cast applies to the whole of it.
std::string KeyText(const std::vector<std::string>& value_exprs);

// The literal of the key whose text form is the SQL expression `key`: the
// text[] as scalar text (key::text), what a key is as one element of a
// list (self-check's candidates) and what a statement returns to C++.
std::string KeyLiteralOf(const std::string& key);

// The bucket of a key (`buckets` of them): the unit of a drain's lock
// (workers/locks.h), which pages hold whole (staging/ledger_pages.h).
std::string KeyBucket(const std::string& key, int buckets);

// Value `i` (0-based) of the key whose text form is the SQL expression
// `key`, as text: (key)[i+1].
std::string KeyElement(const std::string& key, size_t i);
// The same cast back to `type`: (key)[i+1]::type.
std::string KeyValue(const std::string& key, size_t i, const std::string& type);
// Every value of `key`, each cast back to its type of `types`.
std::vector<std::string> KeyValues(const std::string& key, const std::vector<std::string>& types);

// A page's keys (a 2-D text[] `keys_expr`, one key of `width` values per
// row) as rows: a FROM-clause item with columns <alias>.c1 .. c<width>
// (text), one row per key. `row_id` identifies the array among those the
// query reads (sql/flat_rows.h).
std::string KeyRows(const std::string& keys_expr, const std::string& row_id, size_t width,
                    const std::string& alias);
// The cells of a KeyRows row: <alias>.c1 .. <alias>.c<width>.
std::vector<std::string> KeyRowCells(const std::string& alias, size_t width);
// The text form of a KeyRows row: ARRAY[<alias>.c1, ...].
std::string KeyOfRow(const std::string& alias, size_t width);
// The values of a KeyRows row cast back to `types`: <alias>.c<i>::type.
std::vector<std::string> KeyRowValues(const std::string& alias,
                                      const std::vector<std::string>& types);

// ---- C++ ----

// A key's values in key-column order; nullopt is SQL NULL.
using KeyValueList = std::vector<std::optional<std::string>>;

// The key literal of `values`, exactly as PostgreSQL prints the text[]
// (array_out): an element is double-quoted when it is empty, spells NULL in
// any case, or holds a quote, backslash, comma, brace or white space, and
// inside quotes `"` and `\` are escaped with a backslash; a NULL value is
// the bare word NULL. So a literal built here compares equal, as text, with
// the one a statement returned for the same values.
std::string KeyLiteral(const KeyValueList& values);

// The values of a key literal as PostgreSQL prints it (or as KeyLiteral
// wrote it). REQUIRES: a one-dimensional text[] literal.
KeyValueList ParseKeyLiteral(std::string_view literal);

// A list of keys as one text[] value, each element a whole key literal:
// the form a statement unnests and casts back with `k::text[]`
// (self-check's candidates), and ParseKeyList reads.
std::string KeyListLiteral(const std::vector<std::string>& key_literals);
std::vector<std::string> ParseKeyList(std::string_view list);

// The keys of a key list `list` (a text[] expression, KeyListLiteral) as
// rows of one column `key` (text[]).
std::string KeysOfList(const std::string& list);

// Keys as a 2-D text[], one key per row: the form a page holds its keys in
// and plan::MaintainPlan::RecomputeKeysSql takes. REQUIRES: every key has
// the same number of values.
std::string KeyRowsLiteral(const std::vector<std::string>& key_literals);

}  // namespace trellis::sql
