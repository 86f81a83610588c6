// The rewrite of a grouped statement's expressions over a grouping's
// target (issue 26): a SELECT item or HAVING of the statement as written,
// each aggregate call replaced by what the caller reads it from and each
// GROUP BY expression, outside calls, by the target's column of its SELECT
// item. The compiled stages of aggregate_stages.h and
// distinct_aggregate_stages.h both read a statement this way.
//
// It works on token spans (the grammar's aggregate uses, and the lexer's
// tokens between them), never on raw text, so a string literal or a quoted
// name that looks like a call or a column is left alone. Pure functions.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/ast.h"
#include "trellis/status.h"

namespace trellis::plan {

// What an aggregate call reads as over the grouping's target.
using CallSql = std::function<std::string(const grammar::AggregateCall&)>;

// `expr` (a SELECT item's or HAVING's text of `stmt`, with its aggregate
// calls `uses`) over a grouping's target aliased `alias`: each call as
// `call_sql` gives it, each GROUP BY expression (found by its tokens: `c`
// and `q.c` match, as PostgreSQL reads them alike in one grouped query) as
// `alias.<its SELECT item's name>`. Refuses (validation, naming the
// transform and `what`) a column outside the calls that is no GROUP BY
// expression as written, but is qualified or is the name of one of the
// target's group columns: it would read that column instead.
Result<std::string> RewriteOverGroups(const grammar::TransformStmt& stmt, std::string_view alias,
                                      const std::string& expr,
                                      const std::vector<grammar::AggregateUse>& uses,
                                      const std::string& what, const CallSql& call_sql);

// A call as SQL text, `name(argument)`, `name(DISTINCT argument)` or
// `count(*)`: one text per distinct call, however it was written.
std::string CallText(const grammar::AggregateCall& call);

}  // namespace trellis::plan
