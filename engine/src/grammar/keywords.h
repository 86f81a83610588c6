// The keywords of Trellis's grammar (spec/grammar.md, "Keywords").
#pragma once

#include <string_view>

namespace trellis::grammar {

// True for every keyword of the grammar, reserved or not. `word` must already
// be folded to lower case.
bool IsKeyword(std::string_view word);

// True for the keywords that cannot be used as an unquoted name (AS, FROM,
// JOIN, ON, AND, SELECT, WHERE, GROUP, COLUMN): exactly those PostgreSQL
// reserves too, so a name that is legal unquoted in PostgreSQL stays legal
// here. `word` must already be folded to lower case.
bool IsReservedKeyword(std::string_view word);

// True for the words PostgreSQL reserves (its "reserved" and "reserved (can
// be function or type)" keywords): written bare, such a word is never a
// column reference. `word` must already be folded to lower case.
bool IsPostgresReservedWord(std::string_view word);

}  // namespace trellis::grammar
