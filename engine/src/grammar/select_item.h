// Parsing of one SELECT item (spec/grammar.md, "SELECT items"): an
// expression named with AS, or a bare column reference named after its
// column, with the aggregate call it is, if any.
#pragma once

#include <cstddef>
#include <string_view>
#include <variant>

#include "grammar/aggregate.h"
#include "grammar/ast.h"
#include "grammar/parse_error.h"
#include "grammar/token_cursor.h"

namespace trellis::grammar {

struct ParsedSelectItem {
  SelectItem item;
  std::size_t name_position = 0;  // where the column's name was written
};

// Parses `expression AS name` or a bare column reference (`price`,
// `o.price`, `"Price"`, `app.orders.price`), which takes its last part as its
// name, as SQL names it. `what` completes "expected <what>, found ..." when
// the expression is empty; `context` says what DISTINCT inside an aggregate
// call means there (grammar/aggregate.h).
std::variant<ParsedSelectItem, ParseError> ParseSelectItem(
    TokenCursor& cursor, std::string_view what,
    AggregateContext context = AggregateContext::kStatement);

}  // namespace trellis::grammar
