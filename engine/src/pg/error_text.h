// Error texts fit for users. PostgreSQL's full error text can quote the
// statement that failed ("LINE 1: ...trellis_definition_check AS SELECT
// ..." and a caret line, QUERY:, CONTEXT:), and that statement is SQL the
// engine generated: it means nothing to the user and must not reach them.
// The full text goes to the debug log only.
#pragma once

#include <string>
#include <string_view>

namespace trellis::pg {

// The message lines of a libpq error text, joined by "; ": severity
// prefixes ("ERROR:  ", "FATAL:  ") dropped, and every line that quotes or
// locates a statement (LINE n: and its caret line, QUERY:, CONTEXT:,
// STATEMENT:, LOCATION:) left out, as are DETAIL: and HINT: (the Status
// carries those as fields).
std::string MessageLines(std::string_view text);

// The message for a call whose connection was lost: what happened, that the
// call's effect is unknown, and what to do. `why` is libpq's reason (may be
// empty).
std::string ConnectionLostMessage(std::string_view why);

}  // namespace trellis::pg
