// Quoting for SQL text the engine builds. Every identifier that reaches SQL
// goes through QuoteIdent, every literal through QuoteLiteral, so no name or
// value can change the statement's meaning.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace trellis::sql {

// "name" with embedded quotes doubled. Always quotes.
std::string Ident(std::string_view name);
// schema.name, each part quoted.
std::string Qualified(std::string_view schema, std::string_view name);
// 'text' with embedded quotes doubled, E'' never used (standard strings).
std::string Literal(std::string_view text);
// Joins with a separator.
std::string Join(const std::vector<std::string>& parts, std::string_view sep);
// Replaces every "{schema}" in `text` with the quoted catalog schema.
std::string WithSchema(std::string_view text, std::string_view schema);

// A PostgreSQL text[] literal of the given elements ('{"a","b"}' form,
// without the surrounding quotes of a SQL literal).
std::string ArrayLiteral(const std::vector<std::string>& elements);
// Parses a text[] value as libpq returns it in text mode (1-D only).
std::vector<std::string> ParseTextArray(std::string_view text);
// The same, telling a NULL element (PostgreSQL writes it unquoted) from the
// text 'NULL' (which it quotes): nullopt for the former.
std::vector<std::optional<std::string>> ParseNullableTextArray(std::string_view text);

}  // namespace trellis::sql
