// Finds where an embedded SQL expression ends. Trellis does not parse SQL
// expressions: it captures their text for PostgreSQL to validate at define
// time, and only needs their boundaries (spec/grammar.md, "Expressions").
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "grammar/parse_error.h"
#include "grammar/token_cursor.h"

namespace trellis::grammar {

// An expression's exact source text, from its first token to its last (so
// surrounding whitespace and comments are not part of it), the byte offset
// of its first token, and how many tokens it has. Only its first few tokens
// are kept (positions are the statement's): enough for the shape checks (a
// bare column reference, `*`, the GROUP BY forms), while an expression may
// be a million tokens long. Checks that need every token read them again
// from the statement (Lexer's range form), one at a time.
struct ExprSpan {
  static constexpr std::size_t kKeptTokens = 8;

  std::string text;
  std::size_t position = 0;
  std::size_t token_count = 0;
  std::vector<Token> first_tokens;  // min(token_count, kKeptTokens) tokens

  // One past the last byte of the expression in the statement.
  std::size_t end() const { return position + text.size(); }
};

// True when the cursor is on a keyword that ends an expression written at
// bracket depth 0 (`after_dot`: the previous token was `.`, so a keyword is a
// column name): AS, WHERE, GROUP BY, HAVING, WITHOUT SOURCE, and the clauses
// of a SELECT that Trellis refuses (ORDER BY, LIMIT, OFFSET, WINDOW,
// UNION, INTERSECT, EXCEPT), so that they are reported by name rather than
// read as part of an expression.
bool AtClauseKeyword(const TokenCursor& cursor, bool after_dot = false);

// Scans tokens from the cursor's position up to, not including, the first
// delimiter outside brackets: `,`, `;`, end of statement, or a clause keyword
// (AtClauseKeyword). Brackets ( ) and [ ] must balance, and `;` may not
// appear inside them. An empty expression is an error reading
// "expected <what>, found ...".
std::variant<ExprSpan, ParseError> ScanExpression(TokenCursor& cursor, std::string_view what);

}  // namespace trellis::grammar
