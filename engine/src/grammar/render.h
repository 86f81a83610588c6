// Turns a parsed TRANSFORM back into canonical statement text: what the
// engine stores as a definition and what definitions/1 shows. Parsing the
// result gives back an equal TransformStmt. Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "grammar/ast.h"

namespace trellis::grammar {

// The canonical text, on one line, keywords in upper case:
//   TRANSFORM t FROM s AS a JOIN o AS b ON a.x = b.y SELECT e AS c, ...
//       WHERE p GROUP BY e, ... WITHOUT SOURCE INDEX
// Expressions are reproduced exactly as written; names are quoted only
// when RenderName says so.
std::string Render(const TransformStmt& statement);

// Appends ` FROM ...` of `statement` to `text`: its FROM, joins, SELECT
// list, WHERE, GROUP BY, HAVING and ORDER BY, without the target and the
// trailing clauses (a UNION ALL branch is rendered by it).
void RenderQuery(const TransformStmt& statement, std::string& text);

// A query in parentheses (a WITH query or a query in FROM) as RenderQuery
// writes it, without the space before its FROM.
void RenderInnerQuery(const TransformStmt& query, std::string& text);

// A name as Trellis statement text: unquoted if it is a plain lower-case
// identifier ([a-z_][a-z0-9_$]*) and not a keyword of the grammar, else
// double-quoted (QuoteIdent).
std::string RenderName(std::string_view name);

// RenderName of each part, joined by '.'.
std::string RenderQualified(const QualifiedName& name);

}  // namespace trellis::grammar
