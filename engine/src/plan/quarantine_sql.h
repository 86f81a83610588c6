// How every plan kind writes a column in quarantine (spec/engine.md
// "Charging a failure"): the column keeps being maintained, except for the
// keys recorded in quarantined_rows for it, whose value is written as NULL
// without evaluating the expression that fails for them. A plan writes a
// column paused with kind quarantine through QuarantineGuarded(), and leaves
// out every column paused with another kind.
#pragma once

#include <string>
#include <vector>

#include "catalog/model.h"

namespace trellis::plan {

// Whether the plan writes `c`: a live column, or one in quarantine.
bool IsWritten(const catalog::Column& c);

// SQL true when `key_text` (a key's text form, sql::KeyText) is recorded in
// quarantine for `column`.
std::string IsQuarantinedKey(const std::string& schema, int transform_id, const std::string& column,
                             const std::string& key_text);

// `CASE WHEN <key of this row is quarantined for column> THEN NULL ELSE expr
// END`. `key_text` is the row's key's text form (sql::KeyText), `expr` the
// parenthesised value expression. CASE evaluates `expr` only for the other
// rows, so the failing rows no longer fail the statement.
std::string QuarantineGuarded(const std::string& schema, int transform_id,
                              const std::string& column, const std::string& key_text,
                              const std::string& expr);
// The same where a row's value is quarantined under any of `key_texts`
// (a row of a side unit: its own unit, or its whole root's).
std::string QuarantineGuarded(const std::string& schema, int transform_id,
                              const std::string& column, const std::vector<std::string>& key_texts,
                              const std::string& expr);

}  // namespace trellis::plan
